import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import Fastify from 'fastify';
import multipart from '@fastify/multipart';
import pg from 'pg';
import { BASELINE_TABLE, BENCH_PAGE_SLUG, widgetRowsSql } from './seed.ts';
import { BASELINE_PAGE_ETAG } from './baseline-page.ts';
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

// The service's list statement (framework/operations/entity-ops.ts), with the tenant as a filter.
const LIST = `select ${COLUMNS}, (select count(*) from ${BASELINE_TABLE} where tenant_id = $3 and deleted_at is null) as "__total"
   from ${BASELINE_TABLE} where tenant_id = $3 and deleted_at is null order by created_at asc, id asc limit $1 offset $2`;

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
  for (const tenantId of settings.tenantIds) await pool.query(widgetRowsSql(BASELINE_TABLE, true), [settings.rowsPerTenant, tenantId]);
  await pool.query(`vacuum analyze ${BASELINE_TABLE}`);
  const tenantId = settings.tenantIds[0]!;

  const app = Fastify({ logger: false });
  app.get('/health', async () => ({ status: 'ok' }));
  // The bare static 304: a fixed ETag compared with If-None-Match, no tenant, no database.
  app.get('/api/v1/content/public/:slug', async (request, reply) => {
    reply.header('etag', BASELINE_PAGE_ETAG).header('cache-control', 'public, no-cache');
    if ((request.params as { slug: string }).slug === BENCH_PAGE_SLUG && request.headers['if-none-match'] === BASELINE_PAGE_ETAG) return reply.code(304).send();
    return { slug: BENCH_PAGE_SLUG, title: 'Benchmark page', kind: 'page', body: '<h1>A benchmark page</h1>', publishedAt: new Date(0).toISOString() };
  });
  app.get('/api/v1/testkit/widgets', async (request) => {
    const query = request.query as { limit?: string; offset?: string };
    const limit = Number(query.limit ?? 20);
    const offset = Number(query.offset ?? 0);
    const { rows } = await pool.query<Record<string, unknown> & { __total: number }>(LIST, [limit, offset, tenantId]);
    const total = rows.length > 0 ? Number(rows[0]!.__total) : 0;
    return { items: rows.map(({ __total, ...row }) => row), total, limit, offset };
  });
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
      app
        .close()
        .then(() => pool.query(`drop table if exists ${BASELINE_TABLE}`))
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
