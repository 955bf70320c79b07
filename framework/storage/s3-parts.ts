import { Writable } from 'node:stream';
import {
  ChecksumAlgorithm,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { releaseChunk } from './chunk-release.ts';

export interface PartWriterOptions {
  client: S3Client;
  Bucket: string;
  Key: string;
  /** Bytes of every part but the last (S3: at least 5 MiB). */
  partSize: number;
  /** UploadPart requests sent at once; the writer holds partsInFlight + 1 part buffers at most. */
  partsInFlight: number;
  /** The chunks written are the writer's alone: each is freed once copied (chunk-release.ts). */
  handOver: boolean;
  /** What a failure of the store becomes (the caller's STORAGE_UNAVAILABLE). */
  storeFailure: (cause: unknown) => Error;
}

/** A part buffer and, while it is being sent, its UploadPart. */
interface Slot {
  buffer: Buffer;
  sending: Promise<void> | undefined;
}

/**
 * Stores what is written to it as one object, in a fixed amount of memory. The bytes are copied
 * into at most `partsInFlight + 1` part buffers, allocated as needed and reused: one is filled
 * while the others go up as UploadPart requests; a writer with no free buffer waits for one (so
 * the source is paused, not buffered). Each written chunk is freed once copied when handed over.
 * A blob that fits in one part is one PutObject. Otherwise CreateMultipartUpload, the parts and
 * CompleteMultipartUpload, so the object appears under its key only once complete; on failure the
 * caller waits for `settle()` and aborts `uploadId` (the writer never aborts: the caller logs it).
 *
 * lib-storage's Upload does not bound memory this way: it concatenates each part out of the
 * source's chunks into a new buffer, so a 1 GiB upload leaves some 200 dead parts and 16,000 dead
 * chunks to V8's collector (RSS grew by about 100 MiB; docs/files.md, "Memory").
 */
export class PartWriter extends Writable {
  uploadId: string | undefined;
  private readonly options: PartWriterOptions;
  private readonly slots: Slot[] = [];
  private filling: Slot | undefined;
  private filled = 0;
  private partNumber = 0;
  private readonly parts: CompletedPart[] = [];
  private failure: Error | undefined;
  private readonly outstanding = new Set<Promise<unknown>>();
  /** Stops every request in flight once the upload has failed. */
  private readonly cancel = new AbortController();
  private creating: Promise<string> | undefined;

  constructor(options: PartWriterOptions) {
    super({ decodeStrings: true });
    this.options = options;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (err?: Error | null) => void): void {
    // Most chunks fit in the buffer being filled: copied at once, with no promise per chunk.
    if (
      this.failure === undefined &&
      this.filling !== undefined &&
      chunk.length <= this.options.partSize - this.filled
    ) {
      this.filled += chunk.copy(this.filling.buffer, this.filled);
      if (this.options.handOver) releaseChunk(chunk);
      done();
      return;
    }
    this.copy(chunk).then(
      () => {
        if (this.options.handOver) releaseChunk(chunk);
        done(this.failure ?? null);
      },
      (err: unknown) => done(err as Error),
    );
  }

  override _final(done: (err?: Error | null) => void): void {
    this.finish().then(
      () => done(),
      (err: unknown) => done(err as Error),
    );
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.cancel.abort();
    done(err);
  }

  /** Resolves once no request of this upload is in flight (after a failure: before aborting it). */
  async settle(): Promise<void> {
    this.cancel.abort();
    while (this.outstanding.size > 0) await Promise.allSettled([...this.outstanding]);
  }

  private async copy(chunk: Buffer): Promise<void> {
    let at = 0;
    while (at < chunk.length) {
      if (this.failure) throw this.failure;
      if (this.destroyed) return;
      // A full buffer goes up only once another byte arrives: a blob of exactly one part is a PutObject.
      if (this.filling === undefined || this.filled === this.options.partSize) {
        if (this.filling !== undefined) await this.sendPart(false);
        this.filling = await this.freeSlot();
        this.filled = 0;
        if (this.destroyed) return;
      }
      const copied = chunk.copy(this.filling.buffer, this.filled, at);
      this.filled += copied;
      at += copied;
    }
  }

  /** A buffer nobody is sending: a new one while fewer than partsInFlight + 1 exist, else the first sent to come back. */
  private async freeSlot(): Promise<Slot> {
    const idle = this.slots.find((slot) => slot.sending === undefined);
    if (idle) return idle;
    if (this.slots.length < this.options.partsInFlight + 1) {
      const slot: Slot = { buffer: Buffer.allocUnsafe(this.options.partSize), sending: undefined };
      this.slots.push(slot);
      return slot;
    }
    await Promise.race(this.slots.map((slot) => slot.sending));
    return this.freeSlot();
  }

  /** Sends the buffer being filled as the next part (creating the multipart upload first). */
  private async sendPart(last: boolean): Promise<void> {
    const slot = this.filling!;
    const Body = slot.buffer.subarray(0, this.filled);
    const PartNumber = ++this.partNumber;
    this.filling = undefined;
    const UploadId = await this.create();
    slot.sending = this.track(
      this.options.client.send(
        new UploadPartCommand({
          Bucket: this.options.Bucket,
          Key: this.options.Key,
          UploadId,
          PartNumber,
          Body,
          ContentLength: Body.length,
        }),
        {
          abortSignal: this.cancel.signal,
        },
      ),
    ).then(
      (answer) => {
        const { ETag, ChecksumCRC32, ChecksumCRC32C, ChecksumCRC64NVME, ChecksumSHA1, ChecksumSHA256 } = answer;
        this.parts.push({
          PartNumber,
          ETag,
          ChecksumCRC32,
          ChecksumCRC32C,
          ChecksumCRC64NVME,
          ChecksumSHA1,
          ChecksumSHA256,
        });
        slot.sending = undefined;
      },
      (err: unknown) => {
        // Kept for the next write or the end; the other parts in flight are stopped.
        this.failure ??= this.options.storeFailure(err);
        this.cancel.abort();
        slot.sending = undefined;
      },
    );
    if (last) await slot.sending;
  }

  private create(): Promise<string> {
    this.creating ??= (async () => {
      // CRC32 parts, as lib-storage asks for, unless the client was told to checksum only when required.
      const checksums = (await this.options.client.config.requestChecksumCalculation()) === 'WHEN_SUPPORTED';
      const created = await this.track(
        this.options.client.send(
          new CreateMultipartUploadCommand({
            Bucket: this.options.Bucket,
            Key: this.options.Key,
            ...(checksums ? { ChecksumAlgorithm: ChecksumAlgorithm.CRC32 } : {}),
          }),
          { abortSignal: this.cancel.signal },
        ),
      ).catch((err: unknown) => {
        throw this.options.storeFailure(err);
      });
      if (!created.UploadId) throw this.options.storeFailure(new Error('CreateMultipartUpload answered no UploadId'));
      this.uploadId = created.UploadId;
      return created.UploadId;
    })();
    return this.creating;
  }

  private async finish(): Promise<void> {
    await this.store();
    // Every request that read the part buffers has been answered, so nothing reads them again:
    // freed now rather than left to V8, which would let a few uploads' worth pile up.
    for (const slot of this.slots) releaseChunk(slot.buffer);
  }

  private async store(): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.partNumber === 0) {
      // One part or less: a single PutObject (an empty blob included).
      const Body = this.filling ? this.filling.buffer.subarray(0, this.filled) : Buffer.alloc(0);
      await this.track(
        this.options.client.send(
          new PutObjectCommand({
            Bucket: this.options.Bucket,
            Key: this.options.Key,
            Body,
            ContentLength: Body.length,
          }),
          { abortSignal: this.cancel.signal },
        ),
      ).catch((err: unknown) => {
        throw this.options.storeFailure(err);
      });
      return;
    }
    await this.sendPart(true);
    await Promise.all(this.slots.map((slot) => slot.sending));
    if (this.failure) throw this.failure;
    const Parts = [...this.parts].sort((a, b) => a.PartNumber! - b.PartNumber!);
    await this.track(
      this.options.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.options.Bucket,
          Key: this.options.Key,
          UploadId: this.uploadId,
          MultipartUpload: { Parts },
        }),
        { abortSignal: this.cancel.signal },
      ),
    ).catch((err: unknown) => {
      throw this.options.storeFailure(err);
    });
  }

  /** Counts a request as outstanding until it settles, for settle(). */
  private track<T>(request: Promise<T>): Promise<T> {
    this.outstanding.add(request);
    const untrack = () => void this.outstanding.delete(request);
    request.then(untrack, untrack);
    return request;
  }
}
