import Type from 'typebox';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineCommand, defineEntity, defineModule, defineRoute, entity } from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { streamFrom, streamResponses } from '../../framework/http/stream.ts';
import { notFound, problem } from '../../framework/errors.ts';

/**
 * A test-only module: one entity exercising every kind of field rule, used by the framework
 * tests and as the worked example in docs/module-authoring.md.
 */
export const widget = defineEntity({
  module: 'testkit',
  name: 'widget',
  fields: {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    note: Type.Optional(Type.String({ maxLength: 500 })),
    color: Type.String({ minLength: 1, maxLength: 30 }),
    approved: Type.Boolean(),
    approvedAt: Type.Optional(DateTime()),
  },
  immutable: ['color'],
  commandOwned: { approved: 'approve', approvedAt: 'approve' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  sortable: ['name', 'size'],
  commands: {
    approve: {
      summary: 'Approve a widget',
      body: Type.Object({ comment: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false }),
      publishes: ['testkit.widget.approved'],
      async run(ctx, row) {
        if (row.approved) return;
        ctx.publish('testkit.widget.approved', { id: row.id });
        return { approved: true, approvedAt: new Date().toISOString() };
      },
    },
  },
  admin: { title: 'name', columns: ['name', 'size', 'color', 'approved'] },
});

const articleFields = {
  slug: Type.String({ pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$', minLength: 1, maxLength: 80, description: 'Lower-case words joined by hyphens; unique in the tenant.' }),
  title: Type.String({ minLength: 1, maxLength: 200 }),
  body: Type.String({ maxLength: 10_000 }),
  status: Type.Union([Type.Literal('draft'), Type.Literal('published')], { description: 'Set by the publish command.' }),
  publishedAt: Type.Optional(DateTime({ description: 'Set by the publish command.' })),
};

/** What an anonymous reader receives: no status, no timestamps but the publication's. */
export const ArticlePage = Type.Object(
  { slug: Type.String(), title: Type.String(), body: Type.String(), publishedAt: DateTime() },
  { additionalProperties: false, title: 'Public article' },
);

/**
 * A page readable by anybody once published, at GET /api/v1/testkit/public/{slug}: the worked
 * example of a public read by a unique field, with a typed command (defineCommand).
 */
export const article = defineEntity({
  module: 'testkit',
  name: 'article',
  fields: articleFields,
  commandOwned: { status: 'publish', publishedAt: 'publish' },
  permissions: { read: 'article:read', write: 'article:write' },
  sortable: ['slug'],
  commands: {
    publish: defineCommand(articleFields)({
      summary: 'Publish an article',
      body: Type.Object({ at: Type.Optional(DateTime({ description: 'Publication time; now when left out.' })) }, { additionalProperties: false }),
      publishes: ['testkit.article.published'],
      async run(ctx, row, body) {
        if (row.status === 'published') return;
        ctx.publish('testkit.article.published', { id: row.id });
        return { status: 'published', publishedAt: body.at ?? new Date() };
      },
    }),
  },
  publicRead: {
    by: 'slug',
    // Any case is accepted and looked up lower-cased, as slugs are stored.
    param: Type.String({ pattern: '^[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*$', maxLength: 80 }),
    normalise: (slug) => slug.toLowerCase(),
    where: { status: 'published' },
    schema: ArticlePage,
    shape: (row) => ({ slug: row.slug, title: row.title, body: row.body, publishedAt: row.publishedAt ?? row.updatedAt }),
  },
});

/** Files the streaming routes serve (a fixed 100-byte file of digits, digits.txt). */
export const TESTKIT_FILES = fileURLToPath(new URL('../fixtures/files', import.meta.url));
const FileName = Type.Object({ name: Type.String({ pattern: '^[a-z0-9-]+\\.[a-z]+$', maxLength: 100 }) }, { additionalProperties: false });
export const UPLOAD_LIMIT = 1024;

/** Hand-written routes exercising per-route body limits, multipart uploads and streamed answers. */
export const testkitRoutes = [
  defineRoute({
    method: 'POST',
    url: '/api/v1/testkit/uploads',
    operationId: 'testkit-upload-create',
    summary: 'Upload a file and get back its size and digest',
    description: `A multipart form with one file part, at most ${UPLOAD_LIMIT} bytes in all; nothing is kept.`,
    tags: ['testkit'],
    access: { permission: 'widget:write' },
    transaction: 'none',
    bodyLimit: UPLOAD_LIMIT,
    multipart: { form: Type.Object({ file: Type.String({ format: 'binary', description: 'The file' }) }) },
    schema: {
      response: {
        200: Type.Object({ filename: Type.String(), mimetype: Type.String(), size: Type.Integer(), sha256: Type.String() }),
      },
    },
    handler: async ({ request }) => {
      const part = await request.file();
      if (!part) throw problem('VALIDATION_FAILED', 'The form has no file part');
      const hash = createHash('sha256');
      let size = 0;
      for await (const chunk of part.file as AsyncIterable<Buffer>) {
        hash.update(chunk);
        size += chunk.length;
      }
      return { filename: part.filename, mimetype: part.mimetype, size, sha256: hash.digest('hex') };
    },
  }),
  defineRoute({
    method: 'POST',
    url: '/api/v1/testkit/notes',
    operationId: 'testkit-note-measure',
    summary: 'Measure a short note',
    tags: ['testkit'],
    access: { permission: 'widget:write' },
    bodyLimit: 64,
    schema: {
      body: Type.Object({ text: Type.String() }, { additionalProperties: false }),
      response: { 200: Type.Object({ length: Type.Integer() }) },
    },
    handler: async ({ body }) => ({ length: body.text.length }),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/v1/testkit/files/:name',
    operationId: 'testkit-file-read',
    summary: 'Read a test-kit file, seekable: ranges, HEAD and conditional requests',
    tags: ['testkit'],
    access: { permission: 'widget:read' },
    schema: { params: FileName, response: streamResponses('The file') },
    handler: ({ request, reply, params }) =>
      streamFrom(request, reply, { root: TESTKIT_FILES, path: params.name }, { headers: { 'x-content-type-options': 'nosniff' } }),
  }),
  defineRoute({
    method: 'GET',
    url: '/api/v1/testkit/streamed-files/:name',
    operationId: 'testkit-file-stream',
    summary: 'Read a test-kit file as a store that cannot seek would serve it',
    tags: ['testkit'],
    access: { permission: 'widget:read' },
    schema: { params: FileName, response: streamResponses('The file') },
    handler: async ({ request, reply, params }) => {
      const path = join(TESTKIT_FILES, params.name);
      const stats = await stat(path).catch(() => undefined);
      if (!stats?.isFile()) throw notFound();
      return streamFrom(request, reply, { size: stats.size, mtime: stats.mtime, open: () => createReadStream(path) }, { contentType: 'text/plain' });
    },
  }),
];

export const testkitModule = defineModule({
  name: 'testkit',
  permissions: [
    { name: 'widget:read', description: 'Read widgets' },
    { name: 'widget:write', description: 'Write widgets' },
    { name: 'widget:operate', description: 'An operator-only permission for tests', operator: true },
    { name: 'article:read', description: 'Read articles' },
    { name: 'article:write', description: 'Write articles' },
  ],
  events: ['testkit.widget.approved', 'testkit.article.published'],
  entities: [entity(widget), entity(article)],
  routes: testkitRoutes,
  migrations: fileURLToPath(new URL('../fixtures/migrations/testkit', import.meta.url)),
});
