import type { Config } from '../config/schema.ts';
import type { BlobStore } from './blob-store.ts';
import { LocalDiskStore } from './local-disk.ts';

export type { BlobStore, BlobCapabilities, BlobStat } from './blob-store.ts';

const stores = new Map<string, BlobStore>();

/** The installation's blob store (the local disk under files.dir), one per directory. */
export function blobStoreFor(config: Config): BlobStore {
  let store = stores.get(config.files.dir);
  if (!store) {
    store = new LocalDiskStore(config.files.dir);
    stores.set(config.files.dir, store);
  }
  return store;
}

/** Installs another store for a files.dir (a store of another kind; a test's): blobStoreFor then answers it. */
export function useBlobStore(config: Config, store: BlobStore): void {
  stores.set(config.files.dir, store);
}
