import Type from 'typebox';
import { CompiledQuery, sql } from 'kysely';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  defineCommand,
  defineEntity,
  defineModule,
  defineRoute,
  entity,
  type CommandDefinition,
  type JobDefinition,
} from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';
import { streamFrom, streamResponses } from '../../framework/http/stream.ts';
import { notFound, problem } from '../../framework/errors.ts';

/**
 * A test-only module, used by the framework tests and as the worked examples in
 * docs/module-authoring.md: widget exercises every kind of field rule; gadget is global, setting a
 * singleton, memo has row access, hard delete and the lifecycle hooks.
 */
export const widget = defineEntity({
  module: 'testkit',
  name: 'widget',
  fields: {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    note: Type.Optional(Type.String({ maxLength: 500 })),
    color: Type.String({ minLength: 1, maxLength: 30 }),
    approved: WithDefault(Type.Boolean(), false),
    approvedAt: Type.Optional(DateTime()),
  },
  immutable: ['color'],
  commandOwned: { approved: 'approve', approvedAt: 'approve' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  // History records every field but the note (test/framework/history.test.ts).
  history: { exclude: ['note'] },
  sortable: ['name', 'size'],
  // The tally job's insert names this unique key: on conflict (tenant_id, name) where deleted_at is null.
  storage: { unique: ['name'] },
  commands: {
    approve: {
      summary: 'Approve a widget',
      body: Type.Object({ comment: Type.Optional(Type.String({ maxLength: 200 })) }, { additionalProperties: false }),
      publishes: ['testkit.widget.approved'],
      async run(ctx, row) {
        if (row.approved) return;
        ctx.publish('testkit.widget.approved', { id: row.id });
        return { approved: true, approvedAt: ctx.now.toISOString() };
      },
    },
  },
  admin: { title: 'name', columns: ['name', 'size', 'color', 'approved'] },
});

/**
 * Global: one price list every tenant reads, which only the operator writes. A gadget a setting
 * of any tenant still uses cannot be deleted: the check reads across tenants through a
 * security-definer function (test/fixtures/migrations/testkit/0002_gadgets_settings_memos.sql).
 */
export const gadget = defineEntity({
  module: 'testkit',
  name: 'gadget',
  description: 'A global price list entry: every tenant reads it, the operator writes it.',
  scope: 'global',
  fields: {
    code: Type.String({ minLength: 1, maxLength: 40 }),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    price: Type.Integer({ minimum: 0, maximum: 2147483647 }),
  },
  permissions: { read: 'widget:read', write: 'widget:operate' },
  // The one entity of the kit that keeps no history.
  history: false,
  sortable: ['code', 'price'],
  storage: { unique: ['code'] },
  hooks: {
    async beforeDelete(ctx, { row }) {
      const { rows } = await sql<{ used: boolean }>`select testkit_gadget_in_use(${row.id}) as used`.execute(ctx.db);
      if (rows[0]?.used) throw problem('INVALID_STATE', `gadget ${row.code} is still chosen by a tenant's setting`);
    },
  },
});

const settingFields = {
  theme: Type.String({ minLength: 1, maxLength: 30 }),
  gadgetId: Type.Optional(Type.String({ format: 'uuid' })),
  activations: WithDefault(Type.Integer({ minimum: 0, maximum: 2147483647 }), 0),
  activatedAt: Type.Optional(DateTime()),
};

const ActivateBody = Type.Object(
  { theme: Type.Optional(Type.String({ minLength: 1, maxLength: 30 })) },
  { additionalProperties: false },
);

/** A singleton's command receives null until the row exists, and then returns the new row's values. */
const activate: CommandDefinition<typeof settingFields, typeof ActivateBody, 'testkit.setting.activated', true> = {
  summary: 'Activate the setting, creating it on the first call',
  body: ActivateBody,
  publishes: ['testkit.setting.activated'],
  async run(ctx, row, body) {
    const activatedAt = new Date().toISOString();
    ctx.publish('testkit.setting.activated', { first: row === null });
    if (row === null) return { theme: body.theme ?? 'light', activations: 1, activatedAt };
    return { activations: row.activations + 1, activatedAt, ...(body.theme ? { theme: body.theme } : {}) };
  },
};

/**
 * Singleton: one per tenant at /api/v1/testkit/setting. GET answers 404 until the activate command
 * creates it; PATCH and DELETE are declared, PUT is not.
 */
export const setting = defineEntity({
  module: 'testkit',
  name: 'setting',
  description: "The tenant's one setting, created by its first activation.",
  singleton: true,
  singletonRoutes: ['update', 'delete'],
  fields: settingFields,
  commandOwned: { activations: 'activate', activatedAt: 'activate' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: { activate },
});

/**
 * Row access, hard delete and the hooks: a memo is its owner's alone (anyone else's id answers
 * 404), DELETE removes it, afterWrite marks a long memo (a read-only field) through the framework's
 * write, and afterRead adds an excerpt to every answer.
 */
export const memo = defineEntity({
  module: 'testkit',
  name: 'memo',
  description: 'A note only its owner sees.',
  fields: {
    ownerId: Type.String({ format: 'uuid' }),
    text: Type.String({ minLength: 1, maxLength: 2000 }),
    pinned: WithDefault(Type.Boolean(), false),
    long: WithDefault(Type.Boolean({ description: 'Longer than 100 characters; kept by the service.' }), false),
  },
  immutable: ['ownerId'],
  // A reference the body writes (on create only): the shell's new form offers a picker for it.
  admin: { references: { ownerId: 'user.user' } },
  commandOwned: { pinned: 'pin' },
  readOnly: ['long'],
  computed: {
    excerpt: Type.String({ maxLength: 21, description: 'The first 20 characters, and … when there are more.' }),
  },
  rowAccess: (ctx) => ({ ownerId: ctx.actorId }),
  storage: { deleteMode: 'hard' },
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: {
    pin: {
      summary: 'Pin a memo',
      publishes: ['testkit.memo.pinned'],
      async run(ctx, row) {
        if (row.pinned) return;
        ctx.publish('testkit.memo.pinned', { id: row.id });
        return { pinned: true };
      },
    },
  },
  hooks: {
    async afterWrite(_ctx, { op, row }) {
      if (op === 'delete') return;
      const long = row.text.length > 100;
      if (long !== row.long) return { long };
    },
    afterRead: (_ctx, row) => ({ ...row, excerpt: row.text.length > 20 ? `${row.text.slice(0, 20)}…` : row.text }),
  },
  sortable: ['text'],
});

const articleFields = {
  slug: Type.String({
    pattern: '^[a-z0-9]+(?:-[a-z0-9]+)*$',
    minLength: 1,
    maxLength: 80,
    description: 'Lower-case words joined by hyphens; unique in the tenant.',
  }),
  title: Type.String({ minLength: 1, maxLength: 200 }),
  body: Type.String({ maxLength: 10_000 }),
  status: WithDefault(StringEnum(['draft', 'published'], { description: 'Set by the publish command.' }), 'draft'),
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
  storage: { unique: ['slug'] },
  commands: {
    publish: defineCommand(articleFields)({
      summary: 'Publish an article',
      body: Type.Object(
        { at: Type.Optional(DateTime({ description: 'Publication time; now when left out.' })) },
        { additionalProperties: false },
      ),
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
    shape: (row) => ({
      slug: row.slug,
      title: row.title,
      body: row.body,
      publishedAt: row.publishedAt ?? row.updatedAt,
    }),
  },
});

/** Files the streaming routes serve (a fixed 100-byte file of digits, digits.txt). */
export const TESTKIT_FILES = fileURLToPath(new URL('../fixtures/files', import.meta.url));
const FileName = Type.Object(
  { name: Type.String({ pattern: '^[a-z0-9-]+\\.[a-z]+$', maxLength: 100 }) },
  { additionalProperties: false },
);
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
        200: Type.Object(
          { filename: Type.String(), mimetype: Type.String(), size: Type.Integer(), sha256: Type.String() },
          { description: 'What arrived: the part’s name and type, its size and SHA-256' },
        ),
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
      response: { 200: Type.Object({ length: Type.Integer() }, { description: 'The note’s length in characters' }) },
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
      streamFrom(
        request,
        reply,
        { root: TESTKIT_FILES, path: params.name },
        { headers: { 'x-content-type-options': 'nosniff' } },
      ),
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
      return streamFrom(
        request,
        reply,
        { size: stats.size, mtime: stats.mtime, open: () => createReadStream(path) },
        { contentType: 'text/plain' },
      );
    },
  }),
];

/** Steers the test kit's job from a test: the tenants (by id) whose run fails, and every attempt made. */
export const tallyControl = {
  failFor: new Set<string>(),
  attempts: [] as { tenantId: string; slot: string; openTransactions: number }[],
};

/**
 * A per-tenant job shaped like billing's renewal: a transaction, work with no transaction open,
 * another transaction. Each run records a widget named after its slot, once however often it runs.
 */
export const tallyJob: JobDefinition = {
  name: 'testkit-tally',
  cron: '0 3 * * *',
  perTenant: true,
  retryLimit: 1,
  retryDelay: 1,
  async run(ctx) {
    const tenant = ctx.tenant!;
    const before = await ctx.transaction(async (tx) => {
      const { rows } = await tx.db.executeQuery<{ n: number }>(
        CompiledQuery.raw(`select count(*)::int as n from widgets where color = 'tally'`),
      );
      return rows[0]!.n;
    });
    // The stand-in for a provider call: nothing of the run's may be open meanwhile.
    const { rows } = await ctx.services.db.pool.query<{ n: number }>(
      `select count(*)::int as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'`,
    );
    tallyControl.attempts.push({ tenantId: tenant.id, slot: ctx.slot, openTransactions: rows[0]!.n });
    if (tallyControl.failFor.has(tenant.id)) throw new Error(`testkit-tally refuses tenant ${tenant.slug}`);
    const created = await ctx.transaction(async (tx) => {
      const inserted = await tx.db.executeQuery(
        CompiledQuery.raw(
          `insert into widgets (name, size, color) values ($1, $2, 'tally') on conflict (tenant_id, name) where deleted_at is null do nothing`,
          [`tally ${ctx.slot}`, before],
        ),
      );
      return Number(inserted.numAffectedRows ?? 0) === 1;
    });
    return { widgetsBefore: before, created };
  },
};

export const testkitModule = defineModule({
  name: 'testkit',
  permissions: [
    { name: 'widget:read', description: 'Read widgets' },
    { name: 'widget:write', description: 'Write widgets' },
    { name: 'widget:operate', description: 'An operator-only permission for tests', operator: true },
    { name: 'article:read', description: 'Read articles' },
    { name: 'article:write', description: 'Write articles' },
  ],
  events: ['testkit.widget.approved', 'testkit.setting.activated', 'testkit.memo.pinned', 'testkit.article.published'],
  entities: [entity(widget), entity(gadget), entity(setting), entity(memo), entity(article)],
  routes: testkitRoutes,
  jobs: [tallyJob],
  migrations: fileURLToPath(new URL('../fixtures/migrations/testkit', import.meta.url)),
});
