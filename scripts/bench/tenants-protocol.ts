/** Messages between the tenants scenario and its web and worker processes (node IPC). */

export interface TenantsServiceSettings {
  databaseUrl: string;
  poolSize: number;
  role: 'web' | 'worker';
}

export type TenantsRequest = { type: 'run-job'; job: string; slot: string } | { type: 'cache-size' } | { type: 'stop' };

export type TenantsMessage =
  /** startupMs: milliseconds from the process's start to listening (web) or working (worker). */
  | { type: 'ready'; port: number; startupMs: number; cookieName: string; rssMiB: number }
  | { type: 'job-done'; ms: number; rssPeakMiB: number; runs: number; failed: number }
  | { type: 'cache-size'; size: number }
  | { type: 'failed'; error: string };
