import type { SeedInfo } from './seed.ts';

/** Messages between the run and its two server processes (node IPC). */

export interface ServiceSettings {
  databaseUrl: string;
  poolSize: number;
  runId: string;
  rowsPerTenant: number;
  notifications: number;
  wrongPasswordAccounts: number;
  /** files.dir of the service: the upload scenario's blobs land there. */
  filesDir: string;
  /** files.max_bytes of the service (the upload scenario's size fits). */
  maxUploadBytes: number;
}

export interface BaselineSettings {
  databaseUrl: string;
  poolSize: number;
  tenantIds: string[];
  rowsPerTenant: number;
  /** The bench user: the recipient whose notifications the owner-scoped list reads. */
  recipientId: string;
  /** Where the bare stream-to-disk upload route writes (and removes) its files. */
  filesDir: string;
}

export type ChildRequest =
  | { type: 'probe'; count: number; rate: number }
  | { type: 'drain' }
  | { type: 'stop' }
  | { type: 'live-sessions'; count: number }
  | { type: 'live-tenants'; count: number; sessions: number }
  | { type: 'live-stats' }
  /** Starts a CPU profile of the process (inspector's Profiler), or with `write`, stops it and writes it there. */
  | { type: 'live-profile'; write?: string };

/** A tenant of the live scenario's spread streams: its host and sessions of its user (widget:read and widget:write). */
export interface LiveTenant {
  host: string;
  cookies: string[];
}

/** The live scenario's count of the batches the service ran and the database statements they sent. */
export interface LiveStats {
  batches: number;
  statements: number;
  /** The service process's memory as it sees it (process.memoryUsage), when asked. */
  memory?: NodeJS.MemoryUsage;
  /** Its event loop since the last ask: the delay timers saw (p50, p99, max, ms) and the share of time it was busy. */
  loop?: { delayP50Ms: number; delayP99Ms: number; delayMaxMs: number; utilization: number };
}

export interface ProbeSamples {
  /** Handler start minus the moment the publishing transaction's COMMIT returned. */
  fromCommitMs: number[];
  /** Handler start minus the event's occurred_at (the transaction's start: a bound from above). */
  fromOccurredMs: number[];
  missing: number;
}

export type ChildMessage =
  | { type: 'ready'; port: number; seed?: SeedInfo }
  | { type: 'probe-result'; samples: ProbeSamples }
  | { type: 'drained'; ms: number; eventsMs: number }
  | { type: 'live-sessions'; cookies: string[] }
  | { type: 'live-tenants'; tenants: LiveTenant[] }
  | { type: 'live-stats'; stats: LiveStats }
  | { type: 'live-profile' }
  | { type: 'failed'; error: string };

export const SETTINGS_ENV = 'TENANTRY_BENCH_SETTINGS';
