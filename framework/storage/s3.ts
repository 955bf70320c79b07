import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  paginateListObjectsV2,
  S3Client,
} from '@aws-sdk/client-s3';
import { problem, ProblemError } from '../errors.ts';
import { PartWriter } from './s3-parts.ts';
import {
  assertBlobKey,
  isBlobKey,
  S3_CAPABILITIES,
  type BlobStat,
  type BlobStore,
  type ByteRange,
} from './blob-store.ts';

/** files.s3 of the configuration. */
export interface S3Settings {
  bucket: string;
  /** Empty: the SDK's own (AWS_REGION, the profile). */
  region: string;
  /** Empty: AWS; else the URL of an S3-compatible store. */
  endpoint: string;
  force_path_style: boolean;
  prefix: string;
}

/** How long a client is asked to wait after STORAGE_UNAVAILABLE (Retry-After). */
export const STORAGE_RETRY_AFTER_SECONDS = 5;

/** S3's smallest part (all but the last) and its largest number of parts per upload. */
const MIN_PART_BYTES = 5 * 1024 * 1024;
const MAX_PARTS = 10_000;
/**
 * UploadPart requests in flight at once. One upload holds at most PARTS_IN_FLIGHT + 1 part
 * buffers (those being sent and the one being filled), whatever its size (docs/files.md, "Memory").
 */
const PARTS_IN_FLIGHT = 2;
/**
 * Connections to the store kept open between requests, at most this many at once (the SDK's own
 * default): UploadParts in flight, and downloads, which hold theirs until the body is read.
 */
const MAX_SOCKETS = 50;
/** DeleteObjects takes at most this many keys per request. */
const DELETE_BATCH = 1000;

interface Log {
  warn(details: object, message: string): void;
}

/** A failure of the store itself (unreachable, refused, throttled): 503 with Retry-After, the cause kept for the log. */
function unavailable(cause: unknown): ProblemError {
  const err = problem('STORAGE_UNAVAILABLE', 'The file storage cannot be reached; retry shortly', {
    extensions: { retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS },
  });
  (err as Error).cause = cause;
  return err;
}

/** No object under the key (HeadObject answers NotFound, GetObject NoSuchKey). */
const isMissing = (err: unknown): boolean => {
  const name = (err as { name?: unknown }).name;
  return name === 'NotFound' || name === 'NoSuchKey';
};

/**
 * Blobs as objects of one bucket, under `<prefix><key>`, through the AWS SDK (any S3-compatible
 * store: AWS, MinIO, R2, ...). Credentials come from the SDK's own chain. An upload goes through a
 * PartWriter (s3-parts.ts) on client-s3's commands, in a fixed number of reused part buffers: a
 * small blob is one PutObject, a larger one a multipart upload that S3 makes visible under the key
 * only when CompleteMultipartUpload succeeds, so a key never names a partial blob. A failed upload
 * is aborted here; an abort that fails (s3rver answers 405) is logged and the bucket's
 * AbortIncompleteMultipartUpload lifecycle rule removes the parts.
 */
export class S3Store implements BlobStore {
  readonly capabilities = S3_CAPABILITIES;
  readonly bucket: string;
  readonly prefix: string;
  private readonly client: S3Client;
  private readonly partSize: number;
  private readonly listPageSize: number;
  private readonly log: Log | undefined;

  /** `maxBytes`: files.max_bytes, which sets the part size; `listPageSize`: keys per ListObjectsV2 page (S3's most, 1000). */
  constructor(settings: S3Settings, options: { maxBytes?: number; log?: Log; listPageSize?: number } = {}) {
    this.bucket = settings.bucket;
    this.prefix = settings.prefix;
    this.log = options.log;
    this.listPageSize = options.listPageSize ?? 1000;
    // Parts large enough that the largest allowed file fits in S3's 10,000.
    this.partSize = Math.max(MIN_PART_BYTES, Math.ceil((options.maxBytes ?? 0) / MAX_PARTS));
    this.client = new S3Client({
      ...(settings.region ? { region: settings.region } : {}),
      ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
      forcePathStyle: settings.force_path_style,
      // Every request on a pooled keep-alive connection. The SDK's own agent is bypassed for a
      // request that carries `Expect: 100-continue` (by default any body over 2 MB, so every
      // UploadPart): it is sent on a new agent without keep-alive, a new TCP (and TLS) connection
      // per part, whose sockets, agents and timers were most of the JS heap an upload left behind
      // (docs/files.md, "Memory"). An agent of our own is used for every request, and no part waits
      // for 100 Continue: the upload was accepted by CreateMultipartUpload already.
      expectContinueHeader: false,
      requestHandler: {
        httpAgent: new HttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
        httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: MAX_SOCKETS }),
        // An unreachable store fails in seconds rather than at the operating system's TCP timeout.
        connectionTimeout: 3000,
        socketTimeout: 60_000,
      },
    });
  }

  private objectKey(key: string): string {
    assertBlobKey(key);
    return `${this.prefix}${key}`;
  }

  async put(key: string, source: Readable, options: { handOver?: boolean } = {}): Promise<void> {
    const Key = this.objectKey(key);
    const writer = new PartWriter({
      client: this.client,
      Bucket: this.bucket,
      Key,
      partSize: this.partSize,
      partsInFlight: PARTS_IN_FLIGHT,
      handOver: options.handOver === true,
      storeFailure: unavailable,
    });
    try {
      await pipeline(source, writer);
    } catch (err) {
      // The first failure is the reason: the source's own (a limit, a client gone) as it is, the
      // store's already STORAGE_UNAVAILABLE. No request may still be sending a part when the
      // upload is aborted, or that part would outlive the abort.
      await writer.settle();
      if (writer.uploadId) await this.abort(Key, writer.uploadId);
      throw err;
    }
  }

  private async abort(Key: string, UploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId }));
    } catch (err) {
      // Not fatal: the object never became visible; the bucket's lifecycle rule removes the parts.
      this.log?.warn(
        { err, bucket: this.bucket, key: Key, uploadId: UploadId },
        'could not abort an incomplete multipart upload; its parts stay until the bucket lifecycle rule AbortIncompleteMultipartUpload removes them',
      );
    }
  }

  async stat(key: string): Promise<BlobStat | null> {
    const Key = this.objectKey(key);
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key }));
      return { size: head.ContentLength ?? 0, mtime: head.LastModified ?? new Date(0) };
    } catch (err) {
      if (isMissing(err)) return null;
      throw unavailable(err);
    }
  }

  async open(key: string, range?: ByteRange): Promise<Readable> {
    const Key = this.objectKey(key);
    try {
      const object = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      return object.Body as Readable;
    } catch (err) {
      if (isMissing(err)) throw problem('BLOB_MISSING', 'The bytes of this file are unavailable');
      throw unavailable(err);
    }
  }

  async remove(key: string): Promise<boolean> {
    if ((await this.stat(key)) === null) return false;
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }));
      return true;
    } catch (err) {
      throw unavailable(err);
    }
  }

  async removeMany(keys: readonly string[]): Promise<number> {
    let removed = 0;
    for (let at = 0; at < keys.length; at += DELETE_BATCH) {
      const Objects = keys.slice(at, at + DELETE_BATCH).map((key) => ({ Key: this.objectKey(key) }));
      const answer = await this.client
        .send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects, Quiet: false } }))
        .catch((err: unknown) => {
          throw unavailable(err);
        });
      if (answer.Errors?.length)
        throw unavailable(
          new Error(
            `DeleteObjects refused ${answer.Errors.length} key(s): ${answer.Errors[0]?.Code} ${answer.Errors[0]?.Message}`,
          ),
        );
      removed += answer.Deleted?.length ?? 0;
    }
    return removed;
  }

  /** Every blob under the prefix last modified before `before`, page by page (ListObjectsV2). */
  async *list(before: Date): AsyncIterable<string> {
    const pages = paginateListObjectsV2(
      { client: this.client, pageSize: this.listPageSize },
      { Bucket: this.bucket, Prefix: this.prefix },
    );
    try {
      for await (const page of pages) {
        for (const object of page.Contents ?? []) {
          const key = object.Key?.slice(this.prefix.length) ?? '';
          if (isBlobKey(key) && object.LastModified !== undefined && object.LastModified < before) yield key;
        }
      }
    } catch (err) {
      throw err instanceof ProblemError ? err : unavailable(err);
    }
  }

  /** HeadBucket: the bucket exists and these credentials may use it. */
  async check(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      const { name, message } = err as Error;
      throw new Error(`bucket ${this.bucket}: ${name}${message && message !== name ? ` (${message})` : ''}`, {
        cause: err,
      });
    }
  }
}
