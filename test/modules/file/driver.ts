import { mkdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import type { Config } from '../../../framework/config/schema.ts';
import { blobStoreFor, useBlobStore, type BlobStore } from '../../../framework/storage/index.ts';
import { startS3Server, type S3Server } from '../../helpers/s3.ts';
import { filesUnder, tempFilesDir } from './helpers.ts';

/**
 * The file suite runs once per blob store driver: vitest.config.ts runs test/modules/file a second
 * time with TEST_FILE_DRIVER=s3, against s3rver on loopback. A test reaches the stored bytes only
 * through this harness, so the same assertions hold on both.
 */
export type DriverName = 'local' | 's3';

export const DRIVER: DriverName = process.env.TEST_FILE_DRIVER === 's3' ? 's3' : 'local';

export interface FileDriver {
  readonly name: DriverName;
  /** files.* of a test config for this driver (files.dir is always a fresh temporary directory). */
  readonly files: Partial<Config['files']>;
  /** The s3 driver's server. */
  readonly server: S3Server | undefined;
  /** Everything the store holds: blobs under their keys, and (local disk) what is being written. */
  stored(): Promise<string[]>;
  has(key: string): Promise<boolean>;
  /** Removes a blob behind the service's back (an operator's mistake, a lost disk). */
  drop(key: string): Promise<void>;
  /** Writes a blob behind the service's back: bytes under a key no row names. */
  plant(key: string, content: string): Promise<void>;
  /** Leaves what a put cut off by a crash leaves: a file under incoming/, or a multipart upload never completed. */
  plantIncomplete(): Promise<void>;
  close(): Promise<void>;
}

export async function fileDriver(name: DriverName = DRIVER): Promise<FileDriver> {
  const dir = tempFilesDir();
  if (name === 'local') {
    const path = (key: string) => join(dir, key.slice(0, 2), key);
    return {
      name,
      files: { dir },
      server: undefined,
      stored: async () => filesUnder(dir),
      has: async (key) => existsSync(path(key)),
      drop: async (key) => rmSync(path(key)),
      plant: async (key, content) => {
        mkdirSync(join(dir, key.slice(0, 2)), { recursive: true });
        writeFileSync(path(key), content);
      },
      plantIncomplete: async () => {
        mkdirSync(join(dir, 'incoming'), { recursive: true });
        writeFileSync(join(dir, 'incoming', crypto.randomUUID()), 'half written');
      },
      close: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const server = await startS3Server();
  const prefix = 'blobs/';
  const Bucket = server.bucket;
  return {
    name,
    files: { dir, storage: 's3', s3: server.settings(prefix) },
    server,
    stored: () => server.keys(),
    has: (key) =>
      server.client.send(new HeadObjectCommand({ Bucket, Key: `${prefix}${key}` })).then(
        () => true,
        (err: Error) => (err.name === 'NotFound' ? false : Promise.reject(err)),
      ),
    drop: async (key) => {
      await server.client.send(new DeleteObjectCommand({ Bucket, Key: `${prefix}${key}` }));
    },
    plant: async (key, content) => {
      await server.client.send(new PutObjectCommand({ Bucket, Key: `${prefix}${key}`, Body: content }));
    },
    plantIncomplete: async () => {
      const Key = `${prefix}${crypto.randomUUID()}`;
      const { UploadId } = await server.client.send(new CreateMultipartUploadCommand({ Bucket, Key }));
      await server.client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: 'half written' }));
    },
    close: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Counts the puts the configured store starts and finishes, wrapping it for as long as the test
 * needs (the service asks blobStoreFor on every upload). The store underneath does the work.
 */
export function watchPuts(config: Config): { started: () => number; settled: () => number; restore: () => void } {
  const real = blobStoreFor(config);
  let started = 0;
  let settled = 0;
  const watched = new Proxy(real, {
    get(target, property) {
      if (property === 'put') {
        return async (...args: Parameters<BlobStore['put']>) => {
          started += 1;
          try {
            return await target.put(...args);
          } finally {
            settled += 1;
          }
        };
      }
      const value: unknown = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  useBlobStore(config, watched);
  return { started: () => started, settled: () => settled, restore: () => useBlobStore(config, real) };
}
