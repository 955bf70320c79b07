import type { Readable } from 'node:stream';

/** What a store can do beyond put, open, stat and remove; routes and jobs adapt to it. */
export interface BlobCapabilities {
  /** Bytes can be read from any offset: downloads answer Range requests. */
  readonly seekable: boolean;
  /** Every key can be listed with its age: the reconcile job can find orphans. */
  readonly listable: boolean;
}

export interface BlobStat {
  size: number;
  mtime: Date;
}

/** Bytes `start` to `end` of a blob, both included (as a Range header names them). */
export interface ByteRange {
  start: number;
  end: number;
}

/** What the S3 driver can do (s3.ts), known without loading it and its SDK. */
export const S3_CAPABILITIES: BlobCapabilities = { seekable: true, listable: true };

/**
 * Where uploaded bytes live. A key is a UUID and nothing else: no name a caller chose ever reaches
 * the storage. A blob under a key is always complete: put() writes elsewhere first and makes the
 * bytes appear under the key only once all of them are durable.
 */
export interface BlobStore {
  readonly capabilities: BlobCapabilities;
  /**
   * Streams `source` into a new blob under `key`. Resolves once the blob is durable under the key;
   * if the source fails (a limit, a client gone) nothing is left behind and the error is rethrown.
   * `handOver`: the source's chunks are the store's alone (nobody reads them again), so it may free
   * each one's memory as soon as it is stored (framework/storage/chunk-release.ts).
   */
  put(key: string, source: Readable, options?: { handOver?: boolean }): Promise<void>;
  /** Size and modification time, or null when there is no blob under the key. */
  stat(key: string): Promise<BlobStat | null>;
  /** The bytes from the start, or only `range` (a seekable store). */
  open(key: string, range?: ByteRange): Readable | Promise<Readable>;
  /** Removes the blob; false when there was none (not an error). Other failures throw. */
  remove(key: string): Promise<boolean>;
  /** Removes several blobs in one request where the store can (reconcile's batches); resolves to how many went. */
  removeMany?(keys: readonly string[]): Promise<number>;
  /** Throws unless the store can be reached and written now (the readiness check `storage`). */
  check?(): Promise<void>;
  /** For a store on the local disk: where the blob lies, for a ranged download through @fastify/send (framework/http/stream.ts). */
  locate?(key: string): { root: string; path: string };
  /** For a listable store: the keys of blobs last modified before `before`. */
  list?(before: Date): AsyncIterable<string>;
  /**
   * Removes what interrupted puts left behind before `before` (a crash mid-upload); returns how many.
   * (An object store leaves incomplete multipart uploads, which its lifecycle rule removes.)
   */
  purgeIncomplete?(before: Date): Promise<number>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export const isBlobKey = (key: string): boolean => UUID.test(key);

/** Refuses anything but a lower-case UUID, so a key can never name a path of its own. */
export function assertBlobKey(key: string): void {
  if (!isBlobKey(key)) throw new Error(`not a blob key: ${JSON.stringify(key)}`);
}
