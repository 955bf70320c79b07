import Type from 'typebox';
import { defineRoute } from '../../framework/entity/define.ts';
import { notFound, problem } from '../../framework/errors.ts';
import { problemResponse } from '../../framework/openapi/problem-schema.ts';
import { pageSchema } from '../../framework/operations/paging.ts';
import { QueryList } from '../../framework/query/query-list.ts';
import { ANY_MEDIA_TYPE, streamFrom, streamResponses } from '../../framework/http/stream.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config, Services } from '../../framework/entity/define.ts';
import { blobStoreFor, type ByteRange } from '../../framework/storage/index.ts';
import { answer } from '../../framework/http/entity-route-parts.ts';
import { FileRecord, toRecord, Visibility, type FileRow } from './files-table.ts';
import { ENVELOPE_BYTES, uploadFile } from './upload.ts';
import { contentDisposition } from './names.ts';
import { isRenderable } from './sniff.ts';

const Id = Type.Object({ id: Type.String({ format: 'uuid' }) });

const FILE_COLUMNS =
  'id, name, size, sha256, media_type as "mediaType", visibility, uploaded_by as "uploadedBy", created_at as "createdAt"';
/**
 * The tenant's files, through the query language like every list: by visibility, media type, size,
 * creation time or any other field of the record (never the storage key, which is no field).
 */
export const fileList = new QueryList({
  label: 'files',
  item: FileRecord,
  select: FILE_COLUMNS,
  from: 'files',
  columns: {
    id: 'id',
    name: 'name',
    size: 'size',
    sha256: 'sha256',
    mediaType: 'media_type',
    visibility: 'visibility',
    uploadedBy: 'uploaded_by',
    createdAt: 'created_at',
  },
  indexed: ['createdAt', 'name', 'size'],
  defaultSort: 'createdAt',
});

/**
 * SPEC Files rule 5: the same on both doors; a private file adds no-store. A renderable type is
 * shown inline, named all the same (a browser saving it keeps its name); any other is an attachment.
 */
function downloadHeaders(row: FileRow): Record<string, string> {
  return {
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    'cross-origin-resource-policy': 'same-site',
    'content-disposition': contentDisposition(isRenderable(row.media_type) ? 'inline' : 'attachment', row.name),
  };
}

/**
 * Sends a file's bytes once its row is known (the route's transaction commits before they flow). A row whose blob is
 * gone is an outage, not an unknown file: 503 BLOB_MISSING, logged at error.
 */
async function sendBytes(services: Services, request: FastifyRequest, reply: FastifyReply, row: FileRow) {
  const store = blobStoreFor(services.config);
  const stat = await store.stat(row.storage_key);
  if (!stat) {
    services.log.error({ fileId: row.id, storageKey: row.storage_key }, 'file row names a blob that is missing');
    throw problem('BLOB_MISSING', 'The bytes of this file are unavailable');
  }
  const options = {
    contentType: row.media_type,
    etag: `"${row.sha256}"`,
    headers: downloadHeaders(row),
    ...(row.visibility === 'private' ? { cacheControl: 'no-store' } : {}),
  };
  if (store.capabilities.seekable && store.locate)
    return streamFrom(request, reply, store.locate(row.storage_key), options);
  const source = {
    size: stat.size,
    mtime: stat.mtime,
    seekable: store.capabilities.seekable,
    open: (range?: ByteRange) => store.open(row.storage_key, range),
  };
  return streamFrom(request, reply, source, options);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const downloadDescription =
  "Content-Type is the declared type; X-Content-Type-Options: nosniff, Content-Security-Policy: default-src 'none'; sandbox and " +
  "Cross-Origin-Resource-Policy: same-site always; Content-Disposition: attachment; filename*=UTF-8''<name> unless the type is one of " +
  "image/png, image/jpeg, image/gif, image/webp, image/avif, application/pdf, text/plain, which are inline; filename*=UTF-8''<name> (shown, and saved under their name). ETag is the quoted SHA-256. One Range gives 206 " +
  '(a suffix longer than the file gives all of it); a range wholly past the end is 416; a request for several ranges, or a malformed one, is ' +
  'answered with the whole file (200). If-None-Match, If-Modified-Since, If-Match and If-Range are honoured. ' +
  'A file whose bytes are missing from storage is 503 BLOB_MISSING.';

/** The bytes go out with the media type declared at upload, whatever it is. */
const downloadResponses = {
  ...streamResponses(
    "The bytes, with Content-Type the media type the file was uploaded with (its record's mediaType)",
    ANY_MEDIA_TYPE,
  ),
  503: problemResponse('The bytes are missing from storage (BLOB_MISSING)'),
};

export const fileRoutes = (config: Config) => [
  defineRoute({
    method: 'POST',
    url: '/api/v1/file/files',
    operationId: 'file-file-upload',
    summary: 'Upload a file',
    description:
      `A multipart/form-data form with one file part named file. The form is at most files.max_bytes + ${ENVELOPE_BYTES} bytes ` +
      '(413 PAYLOAD_TOO_LARGE); the file at most files.max_bytes (413 FILE_TOO_LARGE) and within the tenant quota files.quota_bytes ' +
      "(413 QUOTA_EXCEEDED). The part's Content-Type is the declared media type (422 MEDIA_TYPE_INVALID if not type/subtype or over 255 " +
      'characters); a renderable type whose bytes disagree is 422 MEDIA_TYPE_MISMATCH. visibility is the query parameter, never a form ' +
      'field: a form field named visibility (before or after the file part) is 422 VALIDATION_FAILED, pointer /body/visibility, saying to ' +
      'send it in the query string. Nothing is kept after a refusal.',
    tags: ['file'],
    access: { permission: 'file:manage' },
    // The upload's bytes count against file.storage_bytes; a public one asks for file.public_links.
    entitlements: { limit: 'file.storage_bytes', feature: 'file.public_links' },
    transaction: 'none',
    bodyLimit: config.files.max_bytes + ENVELOPE_BYTES,
    publishes: ['file.uploaded'],
    multipart: { form: Type.Object({ file: Type.String({ format: 'binary', description: 'The file' }) }) },
    schema: {
      querystring: Type.Object({ visibility: Visibility }, { additionalProperties: false }),
      response: {
        201: answer(FileRecord, 'The file stored'),
        413: problemResponse(
          'Form past the envelope (PAYLOAD_TOO_LARGE), file past files.max_bytes (FILE_TOO_LARGE) or past the quota (QUOTA_EXCEEDED)',
        ),
        422: problemResponse(
          'No file part (FILE_MISSING), a media type that is not one (MEDIA_TYPE_INVALID), bytes disagreeing with a renderable type (MEDIA_TYPE_MISMATCH), visibility missing from the query string or sent as a form field (VALIDATION_FAILED)',
        ),
        503: problemResponse(
          'The file storage cannot be reached (STORAGE_UNAVAILABLE: nothing is kept), or the database is busy (DB_BUSY); retry after the Retry-After seconds',
        ),
        507: problemResponse(
          'The disk of the local file storage is full (STORAGE_FULL): nothing is kept; an operator must free space',
        ),
      },
    },
    handler: async ({ services, request, reply, session, query }) => {
      const record = await uploadFile(services, request, session!, query.visibility);
      reply.code(201);
      return record;
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/v1/file/files',
    operationId: 'file-file-list',
    summary: 'List files',
    tags: ['file'],
    access: { permission: 'file:read' },
    description:
      'Filtered, sorted and paged like every list (docs/api-conventions.md, "Filters"): visibility=eq.public, mediaType=startsWith.image/, size=gt.1000000, createdAt=gte.now-7d.',
    schema: {
      querystring: fileList.querySchema,
      response: { 200: pageSchema(FileRecord, 'A page of files') },
    },
    exports: fileList.exports('files'),
    handler: ({ tx, query, reply }) => fileList.answer(tx, query, reply),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/v1/file/files/:id',
    operationId: 'file-file-read',
    summary: 'Read a file record',
    tags: ['file'],
    access: { permission: 'file:read' },
    schema: { params: Id, response: { 200: answer(FileRecord, "The file's record") } },
    handler: async ({ tx, params }) => {
      const row = await tx.db.selectFrom('files').selectAll().where('id', '=', params.id).executeTakeFirst();
      if (!row) throw notFound();
      return toRecord(row);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: '/api/v1/file/files/:id',
    operationId: 'file-file-delete',
    summary: 'Delete a file',
    description:
      'Hard delete: the row goes now; the bytes are removed after the commit by the file.deleted subscription.',
    tags: ['file'],
    access: { permission: 'file:manage' },
    publishes: ['file.deleted'],
    schema: { params: Id, response: { 204: Type.Null({ description: 'Deleted' }) } },
    handler: async ({ tx, params, reply }) => {
      const row = await tx.db
        .deleteFrom('files')
        .where('id', '=', params.id)
        .returning(['id', 'storage_key'])
        .executeTakeFirst();
      if (!row) throw notFound();
      tx.publish('file.deleted', { id: row.id, storageKey: row.storage_key });
      reply.code(204);
      return null;
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/v1/file/files/:id/content',
    operationId: 'file-file-content',
    summary: "Download a file's bytes",
    description: downloadDescription,
    tags: ['file'],
    access: { permission: 'file:read' },
    schema: { params: Id, response: downloadResponses },
    // The row is read in the route's transaction; the bytes flow once it has committed.
    handler: async ({ services, request, reply, tx, params }) => {
      const row = await tx.db.selectFrom('files').selectAll().where('id', '=', params.id).executeTakeFirst();
      if (!row) throw notFound();
      return sendBytes(services, request, reply, row);
    },
  }),
  defineRoute({
    method: 'GET',
    url: '/api/v1/file/public/:id',
    operationId: 'file-file-public-content',
    summary: "Download a public file's bytes",
    description: `${downloadDescription} Open to anybody at the tenant's host. A private file, an unknown id and a host with no tenant answer the same 404 NOT_FOUND.`,
    tags: ['file'],
    access: 'public',
    hidesNoSite: true,
    // Any id that is not a public file's, well-formed or not, gets the same 404.
    schema: { params: Type.Object({ id: Type.String({ maxLength: 100 }) }), response: downloadResponses },
    handler: async ({ services, request, reply, tx, params }) => {
      if (!UUID.test(params.id)) throw notFound();
      const row = await tx.db
        .selectFrom('files')
        .selectAll()
        .where('id', '=', params.id)
        .where('visibility', '=', 'public')
        .executeTakeFirst();
      if (!row) throw notFound();
      return sendBytes(services, request, reply, row);
    },
  }),
];
