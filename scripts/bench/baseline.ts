import { randomBytes, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import Fastify from 'fastify';
import multipart from '@fastify/multipart';
import pg from 'pg';
import { BASELINE_NOTIFICATIONS, BASELINE_TABLE, BENCH_PAGE_SLUG, widgetRowsSql } from './seed.ts';
import {
  KeysetPager,
  TOTAL_CAP,
  type ListFilter,
  type ListPlace,
  type Walk,
} from '../../framework/operations/paging.ts';
import { CursorSeal } from '../../framework/operations/cursor.ts';
import { BASELINE_PAGE_ETAG } from './baseline-page.ts';
import { filteredTasks } from './baseline-filtered.ts';
import { BASELINE_TASKS, BASELINE_USERS } from './tasks-seed.ts';
import { SETTINGS_ENV, type BaselineSettings, type ChildMessage, type ChildRequest } from './protocol.ts';

/**
 * The baseline: a bare fastify + pg server answering the same list query and the same insert as
 * the service, on a copy of the widgets table with the same rows and indexes but no row-level
 * security. No tenant resolution, session, permissions, explicit transaction or outbox: one
 * statement per request on a pool of the same size. The service's figures are read against it.
 */
const settings = JSON.parse(process.env[SETTINGS_ENV] ?? '{}') as BaselineSettings;
const send = (message: ChildMessage) => process.send?.(message);

const COLUMNS = 'id, created_at, updated_at, name, size, note, color, approved, approved_at';
const quoted = (list: string) =>
  list
    .split(', ')
    .map((c) => `"${c}"`)
    .join(', ');

/**
 * The service's list statements (framework/operations/paging.ts: the page plus one row, the total
 * counted up to its cap), built by the same pager over the baseline's copies, with the tenant (and
 * for notifications the recipient) as where terms instead of row-level security. Built once here.
 */
const widgetPager = new KeysetPager({
  select: quoted(COLUMNS),
  from: `"${BASELINE_TABLE}"`,
  id: 'id',
  where: ['deleted_at is null'],
  sorts: { createdAt: { column: '"created_at"' } },
});
const notificationPager = new KeysetPager({
  select: 'id, title, body, link, read_at as "readAt", created_at as "createdAt"',
  from: BASELINE_NOTIFICATIONS,
  id: 'id',
  where: [],
  sorts: { createdAt: { column: 'created_at' } },
});
const widgetFilter = (tenantId: string): ListFilter => ({ conditions: ['tenant_id = $1'], params: [tenantId] });
const notificationFilter = (tenantId: string, recipientId: string): ListFilter => ({
  conditions: ['tenant_id = $1', 'recipient_id = $2'],
  params: [tenantId, recipientId],
});

/** The baseline signs its cursors as the service does (a key of its own): a cursor is part of a list's answer. */
const place = (tenantId: string): ListPlace => ({ tenantId, cursors: new CursorSeal(randomBytes(32)) });

/** The page answer from the rows of a page statement (limit + 1 rows asked for). */
function page(rows: Record<string, unknown>[], limit: number, offset: number, sort: string, walk: Walk) {
  const total = rows.length > 0 ? Number(rows[0]!.__total) : 0;
  const more = rows.length > limit;
  const items = more ? rows.slice(0, limit) : rows;
  const last = items.at(-1);
  const next =
    more && last
      ? walk.cursors.seal({ sort, value: last.__sort as string, id: String(last.__id), total }, walk.scope)
      : null;
  return {
    items: items.map(({ __total, __sort, __id, ...row }) => row),
    total: Math.min(total, TOTAL_CAP),
    totalExact: total <= TOTAL_CAP,
    limit,
    offset,
    next,
  };
}

const INSERT = `insert into ${BASELINE_TABLE} (tenant_id, name, size, note, color) values ($1, $2, $3, $4, $5) returning ${COLUMNS}`;

interface WidgetBody {
  name: string;
  size: number;
  note?: string;
  color: string;
}

async function main(): Promise<void> {
  const pool = new pg.Pool({ connectionString: settings.databaseUrl, max: settings.poolSize });
  pool.on('error', () => {});
  await pool.query(`drop table if exists ${BASELINE_TABLE}`);
  await pool.query(`create table ${BASELINE_TABLE} (like widgets including defaults including indexes)`);
  for (const tenantId of settings.tenantIds)
    await pool.query(widgetRowsSql(BASELINE_TABLE, true), [1, settings.rowsPerTenant, tenantId]);
  await pool.query(`vacuum analyze ${BASELINE_TABLE}`);
  const tenantId = settings.tenantIds[0]!;
  const lists = place(tenantId);
  // The first tenant's notifications, copied row for row (the table's row-level security wants the tenant set).
  await pool.query(`drop table if exists ${BASELINE_NOTIFICATIONS}`);
  await pool.query(`create table ${BASELINE_NOTIFICATIONS} (like notifications including defaults including indexes)`);
  await pool.query(
    `begin; select set_config('app.tenant_id', '${tenantId}', true); insert into ${BASELINE_NOTIFICATIONS} select * from notifications; commit`,
  );
  await pool.query(`vacuum analyze ${BASELINE_NOTIFICATIONS}`);

  const app = Fastify({ logger: false });
  app.get('/health', async () => ({ status: 'ok' }));
  // The bare static 304: a fixed ETag compared with If-None-Match, no tenant, no database.
  app.get('/api/v1/content/public/:slug', async (request, reply) => {
    reply.header('etag', BASELINE_PAGE_ETAG).header('cache-control', 'public, no-cache');
    if (
      (request.params as { slug: string }).slug === BENCH_PAGE_SLUG &&
      request.headers['if-none-match'] === BASELINE_PAGE_ETAG
    )
      return reply.code(304).send();
    return {
      slug: BENCH_PAGE_SLUG,
      title: 'Benchmark page',
      kind: 'page',
      body: '<h1>A benchmark page</h1>',
      publishedAt: new Date(0).toISOString(),
    };
  });
  app.get('/api/v1/testkit/widgets', async (request) => {
    const query = request.query as { limit?: string };
    const limit = Number(query.limit ?? 20);
    const { text, params, walk } = widgetPager.statement(
      { limit, offset: 0, sort: 'createdAt' },
      widgetFilter(tenantId),
      lists,
    );
    const { rows } = await pool.query<Record<string, unknown>>(text, params);
    return page(rows, limit, 0, 'createdAt', walk);
  });
  app.get('/api/v1/notification/notifications', async (request) => {
    const query = request.query as { limit?: string };
    const limit = Number(query.limit ?? 20);
    const { text, params, walk } = notificationPager.statement(
      { limit, offset: 0, sort: '-createdAt' },
      notificationFilter(tenantId, settings.recipientId),
      lists,
    );
    const { rows } = await pool.query<Record<string, unknown>>(text, params);
    return page(rows, limit, 0, '-createdAt', walk);
  });
  // The list-filtered scenario's page (its tables are copied by the run, scripts/bench/tasks-seed.ts).
  app.get('/api/v1/task/tasks', () => filteredTasks(pool, tenantId, lists));
  app.post('/api/v1/testkit/widgets', async (request, reply) => {
    const body = request.body as WidgetBody;
    const { rows } = await pool.query(INSERT, [tenantId, body.name, body.size, body.note ?? null, body.color]);
    reply.code(201);
    return rows[0];
  });
  // The upload baseline: the file part streamed to disk and flushed, as the service's store does,
  // with no hashing, sniffing, quota, session or database.
  await mkdir(settings.filesDir, { recursive: true });
  await app.register(async (scope) => {
    await scope.register(multipart, { limits: { fileSize: Number.POSITIVE_INFINITY } });
    scope.post('/upload', { bodyLimit: Number.MAX_SAFE_INTEGER }, async (request, reply) => {
      const part = await request.file();
      if (!part) throw new Error('no file part');
      const path = join(settings.filesDir, randomUUID());
      await pipeline(part.file, createWriteStream(path, { flush: true }));
      await rm(path);
      reply.code(201);
      return { ok: true };
    });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (typeof address !== 'object' || !address) throw new Error('the baseline has no address');

  process.on('message', (message: ChildRequest) => {
    if (message.type === 'stop') {
      void app
        .close()
        .then(() =>
          pool.query(
            `drop table if exists ${BASELINE_TABLE}, ${BASELINE_NOTIFICATIONS}, ${BASELINE_TASKS}, ${BASELINE_USERS}`,
          ),
        )
        .then(() => pool.end())
        .finally(() => process.exit(0));
    }
  });
  send({ type: 'ready', port: address.port });
}

main().catch((err: Error) => {
  send({ type: 'failed', error: err.stack ?? err.message });
  process.exit(1);
});
