import type { Config } from '../config/schema.ts';
import type { BlobStore } from './blob-store.ts';
import { LocalDiskStore } from './local-disk.ts';
import { S3Store } from './s3.ts';

export type { BlobStore, BlobCapabilities, BlobStat, ByteRange } from './blob-store.ts';

const stores = new Map<string, BlobStore>();

/** Which store a configuration names: the directory of the local disk, or the bucket and prefix at an endpoint. */
function storeId(config: Config): string {
  const { storage, dir, s3 } = config.files;
  return storage === 's3' ? `s3 ${s3.endpoint} ${s3.bucket} ${s3.prefix}` : `local ${dir}`;
}

interface Log {
  warn(details: object, message: string): void;
}

/**
 * The installation's blob store (files.storage: the local disk under files.dir, or an S3 bucket),
 * one per place. `log` is kept by the store made on the first call (buildApp makes it).
 */
export function blobStoreFor(config: Config, log?: Log): BlobStore {
  const id = storeId(config);
  let store = stores.get(id);
  if (!store) {
    store =
      config.files.storage === 's3'
        ? new S3Store(config.files.s3, { maxBytes: config.files.max_bytes, ...(log ? { log } : {}) })
        : new LocalDiskStore(config.files.dir);
    stores.set(id, store);
  }
  return store;
}

/** Installs another store for a configuration's place (a store of another kind; a test's): blobStoreFor then answers it. */
export function useBlobStore(config: Config, store: BlobStore): void {
  stores.set(storeId(config), store);
}

/** The readiness check `storage`: the store can be reached and written now (/ready, the admin health page). */
export function storageCheck(config: Config): { name: string; check(): Promise<void> } {
  return {
    name: 'storage',
    check: async () => {
      await blobStoreFor(config).check?.();
    },
  };
}
