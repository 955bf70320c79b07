import { createHash, randomUUID } from 'node:crypto';
import { Transform, finished, type TransformCallback } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { MultipartFile } from '@fastify/multipart';
import { problem, ProblemError } from '../../framework/errors.ts';
import type { Services, SessionInfo, TxContext } from '../../framework/entity/define.ts';
import { blobStoreFor, type BlobStore } from '../../framework/storage/index.ts';
import { toRecord, Visibility, type FileRecordValue } from './files-table.ts';
import { isMediaType, MEDIA_TYPE_MAX, sanitiseName } from './names.ts';
import { watchPartType } from './part-type.ts';
import { bytesAgree, essence, isRenderable, PlainTextCheck, SNIFF_BYTES } from './sniff.ts';
import { admitLimit, requireFeature } from '../../framework/entitlements/limits.ts';

/** Added to files.max_bytes to bound the whole form: boundaries, part headers, a long file name. */
export const ENVELOPE_BYTES = 64 * 1024;

/** What arrived: counted and hashed on the way to storage, with the head kept for sniffing. */
class Meter extends Transform {
  size = 0;
  private readonly hash = createHash('sha256');
  private readonly heads: Buffer[] = [];
  private headLength = 0;
  readonly text: PlainTextCheck | undefined;
  private readonly room: number;

  constructor(room: number, checkText: boolean) {
    // As much buffering as the store's writer, so hashing never stalls the socket on a slow disk.
    super({ highWaterMark: 1024 * 1024 });
    this.room = room;
    this.text = checkText ? new PlainTextCheck() : undefined;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > this.room) {
      done(problem('QUOTA_EXCEEDED', "The upload does not fit in the tenant's remaining storage quota"));
      return;
    }
    this.hash.update(chunk);
    this.text?.update(chunk);
    if (this.headLength < SNIFF_BYTES) {
      // A copy: the chunk itself is handed over to the store, which frees it once written.
      this.heads.push(Buffer.from(chunk.subarray(0, SNIFF_BYTES - this.headLength)));
      this.headLength += Math.min(chunk.length, SNIFF_BYTES - this.headLength);
    }
    done(null, chunk);
  }

  head(): Buffer {
    return Buffer.concat(this.heads);
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

const tooLarge = (max: number) => problem('FILE_TOO_LARGE', `The file is larger than ${max} bytes (files.max_bytes)`);

/** Bytes of stored files of the transaction's tenant. */
export async function usedBytes(tx: TxContext): Promise<number> {
  const row = await tx.db
    .selectFrom('files')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<string>('size'), eb.lit(0)).as('used'))
    .executeTakeFirstOrThrow();
  return Number(row.used);
}

/**
 * POST /api/v1/file/files. The bytes go to storage first, with no transaction open, hashed and
 * counted as they pass; then one transaction, holding the tenant's quota lock, checks the quota
 * again, writes the row and publishes file.uploaded. Any refusal after the first byte removes the
 * blob, so nothing is kept.
 */
export async function uploadFile(
  services: Services,
  request: FastifyRequest,
  session: SessionInfo,
  visibility: 'public' | 'private',
): Promise<FileRecordValue> {
  const tenant = request.tenant!;
  const { max_bytes: maxBytes, quota_bytes: quota } = services.config.files;
  const store = blobStoreFor(services.config);
  // The room left before any byte flows (a short transaction of its own, closed before the form is read).
  const room = quota - (await services.transactions.run(tenant, usedBytes));
  // The form's file parts, of which only the first is read; the iterator then says how the form ended.
  const files = request.files({ limits: { files: 1, fileSize: maxBytes }, throwFileSizeLimit: false });
  const parsing = files.next().then((next) => (next.done ? undefined : next.value));
  // Started after the parser, stopped before a byte of the file is stored (part-type.ts).
  const typeWatch = watchPartType(request.raw, request.headers['content-type']);
  const part = await parsing
    .catch((err: unknown) => {
      // The form parser's own refusals (a Content-Type with no boundary, say) carry no HTTP status:
      // they are the client's malformed form, not a 500. Plugin errors with a status keep it.
      if (err instanceof ProblemError || typeof (err as { statusCode?: unknown }).statusCode === 'number') throw err;
      throw problem('MALFORMED_REQUEST', 'The multipart form could not be read');
    })
    .finally(typeWatch.stop);
  if (part?.fieldname !== 'file') throw problem('FILE_MISSING', 'The form has no file part named file');
  if (sentVisibilityField(part.fields)) {
    part.file.resume();
    throw visibilityFieldRefusal();
  }
  // A part that declares no type is application/octet-stream, not the parser's text/plain.
  const mediaType =
    part.mimetype === 'text/plain' && typeWatch.declared() === false ? 'application/octet-stream' : part.mimetype;
  if (!isMediaType(mediaType)) {
    part.file.resume();
    throw problem(
      'MEDIA_TYPE_INVALID',
      `The part's media type must be type/subtype, at most ${MEDIA_TYPE_MAX} characters`,
    );
  }
  const key = randomUUID();
  const meter = await storeBytes(store, key, part, Math.max(room, 0), maxBytes, essence(mediaType) === 'text/plain');
  const discard = async (refusal: ProblemError): Promise<never> => {
    await store.remove(key);
    throw refusal;
  };
  // A visibility field after the file part: the rest of the form has arrived once the request has.
  await requestEnded(request);
  if (!(await formEnded(files)))
    await discard(problem('MALFORMED_REQUEST', 'The upload ended before the form was complete'));
  if (sentVisibilityField(part.fields)) await discard(visibilityFieldRefusal());
  if (isRenderable(mediaType) && !bytesAgree(mediaType, meter.head(), meter.text?.finish() ?? true)) {
    await discard(problem('MEDIA_TYPE_MISMATCH', `The bytes are not ${essence(mediaType)}`));
  }
  const values = {
    storage_key: key,
    name: sanitiseName(part.filename),
    size: meter.size,
    sha256: meter.digest(),
    media_type: mediaType,
    visibility,
    uploaded_by: session.userId,
  };
  try {
    return await services.transactions.run(
      tenant,
      async (tx) => {
        // One upload of the tenant at a time gets past here, so two cannot both squeeze into the quota.
        await tx.db
          .selectNoFrom((eb) =>
            eb
              .fn('pg_advisory_xact_lock', [eb.fn('hashtextextended', [eb.val(`file-quota:${tenant.id}`), eb.lit(0)])])
              .as('locked'),
          )
          .execute();
        if ((await usedBytes(tx)) + values.size > quota)
          throw problem('QUOTA_EXCEEDED', "The upload does not fit in the tenant's remaining storage quota");
        // The plan's share of it: its own lock (per tenant and limit), taken after the quota's.
        await admitLimit(tx, 'file.storage_bytes', values.size);
        if (values.visibility === 'public') await requireFeature(tx, 'file.public_links');
        const row = await tx.db.insertInto('files').values(values).returningAll().executeTakeFirstOrThrow();
        tx.publish('file.uploaded', {
          id: row.id,
          size: row.size,
          mediaType: row.media_type,
          visibility: row.visibility,
        });
        return toRecord(row);
      },
      { actorId: session.userId },
    );
  } catch (err) {
    await store.remove(key);
    throw err;
  }
}

/** SPEC Files rule 1: visibility is a query parameter, not a form field. */
const sentVisibilityField = (fields: Record<string, unknown>): boolean => fields.visibility !== undefined;

const visibilityFieldRefusal = (): ProblemError => {
  const message = `visibility is a query parameter, not a form field: send it in the query string (?visibility=${Visibility.enum.join(' or ?visibility=')})`;
  return problem('VALIDATION_FAILED', message, { errors: [{ pointer: '/body/visibility', message }] });
};

/** Resolves once the request body has been read to its end (at once when it has been), or has failed. */
function requestEnded(request: FastifyRequest): Promise<void> {
  const raw = request.raw;
  if (raw.readableEnded || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => finished(raw, () => resolve()));
}

/**
 * Whether the parser read the form to its closing delimiter. The file part ends at the delimiter
 * that follows it, so its bytes may all be stored while the form is still cut short after it (the
 * client gone, or the body ending there): that is refused as a form cut inside the part is. A
 * second file part (past the parser's limit of one) is ignored, as it always was.
 */
async function formEnded(files: AsyncIterableIterator<MultipartFile>): Promise<boolean> {
  try {
    for (let next = await files.next(); !next.done; next = await files.next()) next.value.file.resume();
    return true;
  } catch (err) {
    return (err as { code?: unknown }).code === 'FST_FILES_LIMIT';
  }
}

/** Streams the part into the store under key; maps a limit or a lost client to nothing kept. */
async function storeBytes(
  store: BlobStore,
  key: string,
  part: MultipartFile,
  room: number,
  maxBytes: number,
  checkText: boolean,
): Promise<Meter> {
  const meter = new Meter(room, checkText);
  let clientGone = false;
  part.file.on('limit', () => meter.destroy(tooLarge(maxBytes)));
  // finished() also reports a part that failed before this listener existed: a form cut short
  // (no closing boundary) destroys the part while the handler awaited its file part, and piping
  // that dead stream would leave the store waiting for bytes forever.
  finished(part.file, (err) => {
    if (!err) return;
    clientGone = true;
    meter.destroy(err);
  });
  // The store may start reading a moment later (it prepares its directory first): a refusal before
  // then stays on the meter as its error, which the store's pipeline then reports.
  meter.on('error', () => {});
  part.file.pipe(meter);
  try {
    // The chunks are the request body's, read by nobody after the meter: the store may free them.
    await store.put(key, meter, { handOver: true });
  } catch (err) {
    part.file.unpipe(meter);
    part.file.resume();
    if (clientGone) throw problem('MALFORMED_REQUEST', 'The upload ended before the form was complete');
    throw err;
  }
  if (part.file.truncated) {
    await store.remove(key);
    throw tooLarge(maxBytes);
  }
  return meter;
}
