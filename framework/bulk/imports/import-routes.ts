import { createHash, randomUUID } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import Type from 'typebox';
import { StringEnum } from '../../entity/string-enum.ts';
import type { FastifyRequest } from 'fastify';
import type { NoTxRouteDefinition, RouteDefinition } from '../../entity/define.ts';
import type { ModuleRegistry } from '../../contracts/services.ts';
import type {} from '../../contracts/composition.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import type { Services } from '../../services.ts';
import type { Config } from '../../config/schema.ts';
import { RouteGuard } from '../../access/guard.ts';
import { notFound, problem, ProblemError } from '../../errors.ts';
import { problemResponse } from '../../openapi/problem-schema.ts';
import { answer } from '../../http/entity-route-parts.ts';
import { blobStoreFor } from '../../storage/index.ts';
import { identifyUpload } from '../../http/idempotency.ts';
import { isUuid } from '../../operations/entity-sql.ts';
import { IMPORT_BATCH, IMPORT_REQUESTED } from './run-import.ts';
import { ImportStatus, IMPORTS_PATH, importPath, importStatus, REFUSALS_PAGE_MAX } from './import-status.ts';
import type { ImportFormat } from './rows.ts';

/** Added to files.max_bytes to bound the whole form: its boundaries and part headers. */
export const IMPORT_ENVELOPE_BYTES = 64 * 1024;

/** The verb of an entity's import route: POST <list>/import, operation <module>-<entity>-import. */
export const IMPORT_VERB = 'import';

const FORMATS: Readonly<Record<string, ImportFormat>> = {
  'text/csv': 'csv',
  'application/csv': 'csv',
  'application/x-ndjson': 'ndjson',
  'application/ndjson': 'ndjson',
  'application/jsonl': 'ndjson',
  'application/x-jsonlines': 'ndjson',
};

/** The upload's format: asked for, else its part's media type, else its file name's extension. */
function formatOf(asked: ImportFormat | undefined, mediaType: string, name: string): ImportFormat {
  if (asked) return asked;
  const byType = FORMATS[mediaType.split(';', 1)[0]!.trim().toLowerCase()];
  if (byType) return byType;
  const extension = name.toLowerCase().match(/\.([a-z]+)$/)?.[1];
  if (extension === 'csv') return 'csv';
  if (extension === 'ndjson' || extension === 'jsonl') return 'ndjson';
  throw problem(
    'IMPORT_FORMAT_UNKNOWN',
    'The upload is neither CSV nor NDJSON: send format=csv or format=ndjson, a part typed text/csv or application/x-ndjson, or a file named .csv or .ndjson',
  );
}

/** Counts and digests the bytes on their way to the store, refusing past the limit. */
class Counter extends Transform {
  size = 0;
  readonly digest = createHash('sha256');
  private readonly max: number;
  constructor(max: number) {
    super();
    this.max = max;
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    this.digest.update(chunk);
    if (this.size > this.max) done(tooLarge(this.max));
    else done(null, chunk);
  }
}

const tooLarge = (max: number) => problem('FILE_TOO_LARGE', `The upload is larger than ${max} bytes (files.max_bytes)`);

/** Streams the form's file part into the blob store under a new key: no transaction is open, nothing is held whole. */
async function receiveUpload(
  services: Services,
  request: FastifyRequest,
  asked: ImportFormat | undefined,
): Promise<{ key: string; size: number; format: ImportFormat; sha256: string }> {
  const max = services.config.files.max_bytes;
  const part = await request
    .file({ limits: { files: 1, fileSize: max }, throwFileSizeLimit: false })
    .catch((err: unknown) => {
      if (err instanceof ProblemError || typeof (err as { statusCode?: unknown }).statusCode === 'number') throw err;
      throw problem('MALFORMED_REQUEST', 'The multipart form could not be read');
    });
  if (part?.fieldname !== 'file') throw problem('FILE_MISSING', 'The form has no file part named file');
  let format: ImportFormat;
  try {
    format = formatOf(asked, part.mimetype, part.filename);
  } catch (err) {
    part.file.resume();
    throw err;
  }
  const store = blobStoreFor(services.config);
  const key = randomUUID();
  const counter = new Counter(max);
  part.file.on('limit', () => counter.destroy(tooLarge(max)));
  counter.on('error', () => {});
  part.file.pipe(counter);
  try {
    await store.put(key, counter);
  } catch (err) {
    part.file.unpipe(counter);
    part.file.resume();
    throw err;
  }
  if (part.file.truncated) {
    await store.remove(key);
    throw tooLarge(max);
  }
  return { key, size: counter.size, format, sha256: counter.digest.digest('hex') };
}

/**
 * POST /api/v1/<module>/<plural>/import: a CSV or NDJSON upload of rows for the entity's list,
 * answered 202 with the import's status once the upload is in the blob store and the import is
 * queued; a worker creates the rows (run-import.ts). An entity whose create answers a secret shown
 * once (a webhook endpoint's signing secret) has none: its rows' secrets would never be shown.
 */
export function importRoute(entity: ResolvedEntity, config: Config): NoTxRouteDefinition | undefined {
  if (entity.singleton || (entity.def.admin?.shownOnce?.length ?? 0) > 0) return undefined;
  const { names, def } = entity;
  const label = names.labelPlural.toLowerCase();
  return {
    method: 'POST',
    url: `${names.path}/${IMPORT_VERB}`,
    operationId: names.operationId(IMPORT_VERB),
    summary: `Import ${label} from CSV or NDJSON`,
    description:
      `A multipart/form-data form with one file part named file: CSV (RFC 4180, a header row naming the fields, one row per ${names.label.toLowerCase()}; an empty cell leaves its field out) or NDJSON (one JSON object per line, as the create route's body). ` +
      "The format is format=csv or format=ndjson, else the part's type (text/csv, application/x-ndjson), else the file name (.csv, .ndjson). " +
      `The upload is at most files.max_bytes (413 FILE_TOO_LARGE). It is answered 202 with the import's status and Location ${IMPORTS_PATH}/{id}, where a worker's progress is read: ` +
      `every row is checked as POST ${names.path} checks a body (its protected fields and schema, the same problem codes), and the valid ones are created in batches of ${IMPORT_BATCH}, each in one transaction; each refused row is reported with its line and problem. ` +
      'dryRun=true checks and counts every row and creates none. An Idempotency-Key makes a retried upload answer the first import, never a second one.',
    tags: [def.module],
    access: { permission: def.permissions.write },
    transaction: 'none',
    idempotent: true,
    bodyLimit: config.files.max_bytes + IMPORT_ENVELOPE_BYTES,
    publishes: [IMPORT_REQUESTED],
    multipart: {
      form: Type.Object({ file: Type.String({ format: 'binary', description: 'The CSV or NDJSON file' }) }),
    },
    schema: {
      querystring: Type.Object(
        {
          format: Type.Optional(StringEnum(['csv', 'ndjson'])),
          dryRun: Type.Optional(
            Type.Boolean({ default: false, description: 'Check and count every row, create none' }),
          ),
        },
        { additionalProperties: false },
      ),
      response: {
        202: answer(ImportStatus, 'The import, queued'),
        413: problemResponse(
          'Form past the envelope (PAYLOAD_TOO_LARGE), or the upload past files.max_bytes (FILE_TOO_LARGE)',
        ),
        422: problemResponse(
          'No file part (FILE_MISSING), an upload neither CSV nor NDJSON (IMPORT_FORMAT_UNKNOWN), or an Idempotency-Key used for another request (IDEMPOTENCY_KEY_REUSED)',
        ),
      },
    },
    handler: async ({ services, request, reply, query, session, effectTransaction }) => {
      const { format: asked, dryRun } = query as { format?: ImportFormat; dryRun?: boolean };
      const upload = await receiveUpload(services, request, asked);
      // The file is the request's body: the same Idempotency-Key with another file is another request.
      identifyUpload(request, `${upload.format} ${upload.sha256}`);
      const store = blobStoreFor(services.config);
      let queued = false;
      try {
        const answered = await effectTransaction(async (tx) => {
          const row = await tx.db
            .insertInto('imports')
            .values({
              resource: names.key,
              format: upload.format,
              dry_run: dryRun === true,
              storage_key: upload.key,
              size: upload.size,
              created_by: session?.userId ?? null,
              created_by_name: session?.via === 'token' ? (session.tokenName ?? null) : null,
            })
            .returningAll()
            .executeTakeFirstOrThrow();
          tx.publish(IMPORT_REQUESTED, { id: row.id, resource: names.key });
          queued = true;
          reply.code(202).header('location', importPath(row.id));
          return importStatus(tx, row, names.path);
        });
        // A request with the same Idempotency-Key committed first: its import stands, this upload goes.
        if (!queued) await store.remove(upload.key);
        return answered;
      } catch (err) {
        await store.remove(upload.key).catch(() => false);
        throw err;
      }
    },
  };
}

/**
 * GET /api/v1/imports/{id}: an import's progress and its refused rows, to a caller who may create
 * rows in its list (the create route's own guard decides, as for the upload).
 */
export function importStatusRoute(registry: ModuleRegistry): RouteDefinition {
  const guards = new Map<string, RouteGuard>();
  const guardOf = (entity: ResolvedEntity) => {
    let guard = guards.get(entity.names.key);
    if (!guard) {
      guard = new RouteGuard({ permission: entity.def.permissions.write }, registry, entity.def.feature);
      guards.set(entity.names.key, guard);
    }
    return guard;
  };
  return {
    method: 'GET',
    url: `${IMPORTS_PATH}/:id`,
    operationId: 'import-import-read',
    summary: "An import's progress and refused rows",
    description: `Rows read, created and refused so far, and the refused rows with their lines and problems, ${REFUSALS_PAGE_MAX} at most per answer (afterLine pages on). Open to a caller who may create rows in the import's list (403 AUTH_FORBIDDEN otherwise); an unknown id is 404.`,
    tags: ['import'],
    access: 'signedIn',
    problems: {
      403: "A caller who may not create rows in the import's list (AUTH_FORBIDDEN), or a list whose feature the plan lacks (FEATURE_NOT_IN_PLAN)",
    },
    schema: {
      // Not format: 'uuid': an id that is not a UUID is the same 404 as any id that is not there.
      params: Type.Object({ id: Type.String({ description: 'The import’s id (UUID)' }) }),
      querystring: Type.Object(
        {
          afterLine: Type.Optional(
            Type.Integer({ minimum: 0, default: 0, description: 'List the refused rows after this line' }),
          ),
          limit: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: REFUSALS_PAGE_MAX,
              default: 100,
              description: 'Refused rows listed at most',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      response: { 200: answer(ImportStatus, 'The import') },
    },
    handler: async ({ tx, params, query }) => {
      const { id } = params as { id: string };
      if (!isUuid(id)) throw notFound();
      const row = await tx.db.selectFrom('imports').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) throw notFound();
      const entity = registry.entities.find((e) => e.names.key === row.resource);
      if (!entity) throw notFound();
      const guard = guardOf(entity);
      guard.admitTenant(tx.tenant);
      guard.admitCaller(tx.session);
      return importStatus(tx, row, entity.names.path, query as { afterLine: number; limit: number });
    },
  };
}
