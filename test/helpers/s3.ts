import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import type { S3Settings } from '../../framework/storage/s3.ts';

/** s3rver's own credentials: the SDK's default chain finds them in the environment. */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' } as const;

/** An S3-compatible server on loopback, with one bucket, in a temporary directory. */
export interface S3Server {
  readonly bucket: string;
  readonly port: number;
  readonly endpoint: string;
  /** Where s3rver keeps the bucket. */
  readonly directory: string;
  /** files.s3 for this server: path-style requests (s3rver serves no virtual hosts on 127.0.0.1). */
  settings(prefix?: string): S3Settings;
  /** TENANTRY_FILES_* and AWS_* variables for a service process using this server. */
  env(prefix?: string): Record<string, string>;
  /** A client of the server, for a test to look at the bucket behind the service's back. */
  readonly client: S3Client;
  /** Every object key in the bucket (the service's and any other), sorted. */
  keys(): Promise<string[]>;
  /** Stops the server (an outage): the directory stays. */
  stop(): Promise<void>;
  /** Starts it again on the same port and directory. */
  start(): Promise<void>;
  /** Stops it and removes the directory. */
  close(): Promise<void>;
}

const SCRIPT = fileURLToPath(new URL('./s3rver-process.ts', import.meta.url));

/**
 * Starts s3rver in a process of its own (test/helpers/s3rver-process.ts) and sets the S3RVER
 * credentials in this process's environment, where the AWS SDK's default chain reads them.
 */
export async function startS3Server(options: { bucket?: string; directory?: string } = {}): Promise<S3Server> {
  Object.assign(process.env, S3RVER_CREDENTIALS);
  const bucket = options.bucket ?? 'tenantry-test';
  const directory = options.directory ?? mkdtempSync(join(tmpdir(), 'tenantry-s3rver-'));
  let child = await spawnServer(directory, 0, bucket);
  const port = child.port;
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true });
  const settings = (prefix = ''): S3Settings => ({
    bucket,
    region: 'us-east-1',
    endpoint,
    force_path_style: true,
    prefix,
  });
  return {
    bucket,
    port,
    endpoint,
    directory,
    client,
    settings,
    env: (prefix = '') => ({
      ...S3RVER_CREDENTIALS,
      TENANTRY_FILES_STORAGE: 's3',
      TENANTRY_FILES_S3_BUCKET: bucket,
      TENANTRY_FILES_S3_REGION: 'us-east-1',
      TENANTRY_FILES_S3_ENDPOINT: endpoint,
      TENANTRY_FILES_S3_FORCE_PATH_STYLE: 'true',
      TENANTRY_FILES_S3_PREFIX: prefix,
    }),
    async keys() {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(
          new ListObjectsV2Command({ Bucket: bucket, ...(token ? { ContinuationToken: token } : {}) }),
        );
        for (const object of page.Contents ?? []) keys.push(object.Key!);
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return keys.sort();
    },
    stop: () => stopServer(child.process),
    async start() {
      child = await spawnServer(directory, port, bucket);
    },
    async close() {
      client.destroy();
      await stopServer(child.process);
      if (!options.directory) rmSync(directory, { recursive: true, force: true });
    },
  };
}

async function spawnServer(
  directory: string,
  port: number,
  bucket: string,
): Promise<{ process: ChildProcess; port: number }> {
  const child = fork(SCRIPT, [], {
    execArgv: ['--openssl-legacy-provider'],
    env: { ...process.env, S3RVER_DIRECTORY: directory, S3RVER_PORT: String(port), S3RVER_BUCKET: bucket },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('s3rver did not start within 20 s')), 20_000);
    child.once('message', (message: { type: string; port: number }) => {
      clearTimeout(timer);
      resolve(message.port);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited with ${code} before it listened`));
    });
  });
  return { process: child, port: ready };
}

/** SIGKILL: the server is gone at once, as in an outage (connections reset, new ones refused). */
async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}
