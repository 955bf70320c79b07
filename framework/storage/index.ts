import type { Config } from '../config/schema.ts';
import { S3_CAPABILITIES, type BlobCapabilities, type BlobStore } from './blob-store.ts';
import { LocalDiskStore } from './local-disk.ts';
import type { S3Store } from './s3.ts';

export type { BlobStore, BlobCapabilities, BlobStat, ByteRange } from './blob-store.ts';

const stores = new Map<string, BlobStore>();
/** The S3 driver, loaded by loadBlobStoreDriver when the configuration names it (a process on the local disk never loads its SDK). */
let S3: typeof S3Store | undefined;

/**
 * Loads the driver of the configuration's store, once, at boot (buildApp): the S3 SDK is a large
 * body of code that an installation on the local disk has no use for.
 */
export async function loadBlobStoreDriver(config: Config): Promise<void> {
  if (config.files.storage === 's3' && !S3) S3 = (await import('./s3.ts')).S3Store;
}

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
    if (config.files.storage === 's3' && !S3)
      throw new Error('files.storage is s3: loadBlobStoreDriver must run first');
    store =
      config.files.storage === 's3'
        ? new S3!(config.files.s3, { maxBytes: config.files.max_bytes, ...(log ? { log } : {}) })
        : new LocalDiskStore(config.files.dir);
    stores.set(id, store);
  }
  return store;
}

/**
 * What the configuration's store can do, known while the modules are declared (before buildApp
 * has loaded the S3 driver): the store's own, once made; else its driver's.
 */
export function blobCapabilitiesFor(config: Config): BlobCapabilities {
  const made = stores.get(storeId(config));
  if (made) return made.capabilities;
  return config.files.storage === 's3' ? S3_CAPABILITIES : LocalDiskStore.capabilities;
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
