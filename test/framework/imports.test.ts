import { beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testConfig } from '../helpers/config.ts';
import { outboxRows } from '../helpers/outbox.ts';

/**
 * Imports as jobs (issue 48, point 4), over HTTP with a worker running: a CSV or NDJSON upload is
 * answered 202, a worker checks every row with the create route's rules and creates the valid
 * ones, and GET /api/v1/imports/{id} reports the progress and each refused row's line and problem.
 */

const HOST = 'imports.localhost';
const TASKS = '/api/v1/task/tasks';
const MAX_BYTES = 512 * 1024;
const t = useTestApp({
  customers: ['imports'],
  role: 'all',
  startWorker: true,
  config: testConfig({ files: { max_bytes: MAX_BYTES } }),
});
let writer: SignedIn;
let reader: SignedIn;

beforeAll(async () => {
  writer = await signInAs(t.app, t.imports, ['task:read', 'task:update', 'content:read', 'content:manage']);
  reader = await signInAs(t.app, t.imports, ['task:read']);
});

const deadline = new Date(Date.now() + 7 * 86_400_000).toISOString();

const upload = (
  who: SignedIn,
  path: string,
  content: string,
  options: { name?: string; type?: string; query?: string; key?: string } = {},
) => {
  const req = t.app
    .http(HOST)
    .post(`${path}/import${options.query ? `?${options.query}` : ''}`)
    .set('Cookie', who.cookie);
  if (options.key) req.set('Idempotency-Key', options.key);
  return req.attach('file', Buffer.from(content), {
    filename: options.name ?? 'rows.csv',
    contentType: options.type ?? 'text/csv',
  });
};

/** Polls the import's status until the worker is through with it. */
async function finished(who: SignedIn, location: string, query = '') {
  const until = Date.now() + 60_000;
  for (;;) {
    const res = await t.app.http(HOST).get(`${location}${query}`).set('Cookie', who.cookie);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (res.body.status === 'done' || res.body.status === 'failed') return res.body;
    if (Date.now() > until) throw new Error(`the import is still ${res.body.status}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const tasksTitled = (prefix: string) =>
  t.app.services.transactions.run(t.imports, async (ctx) => {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from tasks where title like ${`${prefix}%`}`.execute(ctx.db);
    return rows[0]!.n;
  });

describe('an import of 1,000 rows with 3 bad ones', () => {
  it('creates 997 and reports each bad row’s line and reason', async () => {
    const prefix = `csv-${randomUUID()}`;
    const lines = ['title,priority,deadline,description'];
    for (let n = 0; n < 1000; n++) {
      // Data rows start on line 2; three are bad: no title (line 40), an unknown priority (500), a date that is none (901).
      const line = n + 2;
      const title = line === 40 ? '' : `"${prefix} ${n}, with a comma"`;
      const priority = line === 500 ? 'urgent' : 'high';
      const due = line === 901 ? 'tomorrow' : deadline;
      lines.push(`${title},${priority},${due},"line ${line} ""quoted"""`);
    }
    const res = await upload(writer, TASKS, `${lines.join('\r\n')}\r\n`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ status: 'queued', format: 'csv', dryRun: false, resource: 'task.task' });
    expect(res.headers.location).toBe(`/api/v1/imports/${res.body.id}`);

    const done = await finished(writer, res.headers.location as string);
    expect(done).toMatchObject({ status: 'done', rowsRead: 1000, created: 997, refused: 3, valid: 997 });
    expect(done.refusals.map((r: { line: number }) => r.line)).toEqual([40, 500, 901]);
    const [noTitle, badPriority, badDate] = done.refusals;
    expect(noTitle.problem.code).toBe('VALIDATION_FAILED');
    expect(noTitle.problem.errors.map((e: { pointer: string }) => e.pointer)).toContain('/title');
    expect(badPriority.problem.errors.every((e: { pointer: string }) => e.pointer === '/priority')).toBe(true);
    expect(badDate.problem.errors.map((e: { pointer: string }) => e.pointer)).toContain('/deadline');
    expect(await tasksTitled(prefix)).toBe(997);
    // Created as the create route creates: each with its event, by the uploader.
    const created = (await outboxRows(t.app, 'task.task.created')).filter((e) => e.tenant_id === t.imports.id);
    expect(created.length).toBeGreaterThanOrEqual(997);
    expect(created.slice(-997).every((e) => e.actor_id === writer.userId)).toBe(true);
    // The upload is gone from the blob store once the import is over.
    const { rows } = await t.app.services.db.pool.query('select storage_key from imports where id = $1', [done.id]);
    expect(rows[0].storage_key).toBeNull();
  });
});

describe('imports', () => {
  it('a dry run checks every row and writes none', async () => {
    const prefix = `dry-${randomUUID()}`;
    const rows = [
      JSON.stringify({ title: `${prefix} a`, priority: 'low', deadline }),
      '',
      JSON.stringify({ title: `${prefix} b`, priority: 'nope', deadline }),
      'not json',
      JSON.stringify({ title: `${prefix} c`, priority: 'low', deadline, assigneeId: randomUUID() }),
      // A member named like an Object.prototype property is an unknown property, as in the create route's body.
      JSON.stringify({ title: `${prefix} d`, priority: 'low', deadline, constructor: 1 }),
    ];
    const res = await upload(writer, TASKS, rows.join('\n'), {
      name: 'rows.ndjson',
      type: 'application/x-ndjson',
      query: 'dryRun=true',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.dryRun).toBe(true);
    const done = await finished(writer, res.headers.location as string);
    expect(done).toMatchObject({ status: 'done', rowsRead: 5, created: 0, valid: 1, refused: 4 });
    expect(done.refusals.map((r: { line: number; problem: { code: string } }) => [r.line, r.problem.code])).toEqual([
      [3, 'VALIDATION_FAILED'],
      [4, 'VALIDATION_FAILED'],
      [5, 'FIELD_COMMAND_OWNED'],
      [6, 'VALIDATION_FAILED'],
    ]);
    expect(await tasksTitled(prefix)).toBe(0);
  });

  it('an NDJSON file that starts with a byte order mark reads its first line as a row', async () => {
    const prefix = `bom-${randomUUID()}`;
    const rows = [
      JSON.stringify({ title: `${prefix} a`, priority: 'low', deadline }),
      JSON.stringify({ title: `${prefix} b`, priority: 'low', deadline }),
    ];
    const res = await upload(writer, TASKS, `\uFEFF${rows.join('\r\n')}\r\n`, {
      name: 'rows.ndjson',
      type: 'application/x-ndjson',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const done = await finished(writer, res.headers.location as string);
    expect(done).toMatchObject({ status: 'done', rowsRead: 2, created: 2, refused: 0 });
    expect(await tasksTitled(prefix)).toBe(2);
  });

  it('rows the database refuses are refused alone: a taken slug, in the same batch as rows that stand', async () => {
    const slug = `taken-${Date.now().toString(36)}`;
    const rows = [
      { slug, title: 'First', kind: 'page', body: 'x' },
      { slug, title: 'Again', kind: 'page', body: 'y' },
      { slug: `${slug}-other`, title: 'Other', kind: 'post', body: 'z' },
    ].map((r) => JSON.stringify(r));
    const res = await upload(writer, '/api/v1/content/contents', rows.join('\n'), {
      query: 'format=ndjson',
      name: 'x.txt',
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const done = await finished(writer, res.headers.location as string);
    expect(done).toMatchObject({ status: 'done', created: 2, refused: 1 });
    expect(done.refusals).toEqual([{ line: 2, problem: expect.objectContaining({ code: 'SLUG_TAKEN' }) }]);
    // The author is the uploader, as the create route sets it.
    const { rows: stored } = await t.app.services.db.pool.query('select author from contents where slug = $1', [slug]);
    expect(stored[0].author).toBe(writer.userId);
  });

  it('rows imported through a personal access token are the token’s: revisions and events name it, not a plain session', async () => {
    const made = await t.app
      .http(HOST)
      .post('/api/v1/auth/tokens')
      .set('Cookie', writer.cookie)
      .send({ name: 'nightly-sync', permissions: ['task:read', 'task:update'] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const title = `token-${randomUUID()}`;
    const res = await t.app
      .http(HOST)
      .post(`${TASKS}/import`)
      .set('Authorization', `Bearer ${made.body.token}`)
      .attach('file', Buffer.from(`title,priority,deadline\n${title},low,${deadline}\n`), {
        filename: 'rows.csv',
        contentType: 'text/csv',
      });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(await finished(writer, res.headers.location as string)).toMatchObject({ status: 'done', created: 1 });
    const { rows } = await t.app.services.db.pool.query(
      `select r.actor_kind as revision_kind, r.actor_id as revision_user, r.actor_name as revision_name,
              o.actor_kind as event_kind, o.actor_id as event_user, o.actor_name as event_name
         from tasks t
         join revisions r on r.row_id = t.id and r.operation = 'create'
         join outbox o on o.name = 'task.task.created' and o.payload->>'id' = t.id::text
        where t.title = $1`,
      [title],
    );
    expect(rows).toEqual([
      {
        revision_kind: 'token',
        revision_user: writer.userId,
        revision_name: 'nightly-sync',
        event_kind: 'token',
        event_user: writer.userId,
        event_name: 'nightly-sync',
      },
    ]);
  });

  it('the same Idempotency-Key does not import twice', async () => {
    const prefix = `idem-${randomUUID()}`;
    const key = randomUUID();
    const content = `title,priority,deadline\n${prefix} a,low,${deadline}\n${prefix} b,low,${deadline}\n`;
    const first = await upload(writer, TASKS, content, { key });
    expect(first.status).toBe(202);
    const again = await upload(writer, TASKS, content, { key });
    expect(again.status).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    await finished(writer, first.headers.location as string);
    expect(await tasksTitled(prefix)).toBe(2);
    const { rows } = await t.app.services.db.pool.query(
      "select count(*)::int as n from imports where tenant_id = $1 and created_at > now() - interval '1 minute' and id <> $2 and size = $3",
      [t.imports.id, first.body.id, Buffer.byteLength(content)],
    );
    expect(rows[0].n).toBe(0);
  });

  it('the same Idempotency-Key with another file is 422 IDEMPOTENCY_KEY_REUSED: that file is not taken for the first', async () => {
    const prefix = `reused-${randomUUID()}`;
    const key = randomUUID();
    const first = await upload(writer, TASKS, `title,priority,deadline\n${prefix} a,low,${deadline}\n`, { key });
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const other = await upload(writer, TASKS, `title,priority,deadline\n${prefix} b,low,${deadline}\n`, { key });
    expect(other.status, JSON.stringify(other.body)).toBe(422);
    expect(other.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    // The same file again is the same request: it replays the first import.
    const again = await upload(writer, TASKS, `title,priority,deadline\n${prefix} a,low,${deadline}\n`, { key });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    await finished(writer, first.headers.location as string);
    expect(await tasksTitled(`${prefix} a`)).toBe(1);
    expect(await tasksTitled(`${prefix} b`)).toBe(0);
  });

  it('a CSV number cell is read as JSON writes a number: 1.5 in an integer column, 0x10, +5 or Infinity are refused, not read as 1, 16 or 5', async () => {
    const widgets = await signInAs(t.app, t.imports, ['widget:read', 'widget:write']);
    const prefix = `cells-${randomUUID()}`;
    const cells = ['7', '-0', '1.5', '0x10', '1e2', '+5', ' 5', '1.0', 'Infinity'];
    const lines = ['name,size,color', ...cells.map((cell, i) => `${prefix} ${i},"${cell}",red`)];
    const res = await upload(widgets, '/api/v1/testkit/widgets', `${lines.join('\n')}\n`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const done = await finished(widgets, res.headers.location as string);
    // The create route takes 7, -0, 1e2 and 1.0 as JSON numbers for an integer; it refuses 1.5, and
    // JSON has no 0x10, +5, " 5" or Infinity: each refused at /size, as the body would be.
    expect(done).toMatchObject({ status: 'done', rowsRead: cells.length, created: 4, refused: 5 });
    for (const refusal of done.refusals as {
      line: number;
      problem: { code: string; errors: { pointer: string }[] };
    }[]) {
      expect(refusal.problem.code).toBe('VALIDATION_FAILED');
      expect(refusal.problem.errors.map((e) => e.pointer)).toContain('/size');
    }
    expect(done.refusals.map((r: { line: number }) => r.line)).toEqual([4, 5, 7, 8, 10]);
    const { rows } = await t.app.services.db.pool.query<{ name: string; size: number }>(
      'select name, size from widgets where name like $1 order by name',
      [`${prefix}%`],
    );
    expect(rows).toEqual([
      { name: `${prefix} 0`, size: 7 },
      { name: `${prefix} 1`, size: 0 },
      { name: `${prefix} 4`, size: 100 },
      { name: `${prefix} 7`, size: 1 },
    ]);
  });

  it('a header naming no field stops the import with a problem', async () => {
    const res = await upload(writer, TASKS, `title,colour\nx,red\n`);
    const done = await finished(writer, res.headers.location as string);
    expect(done.status).toBe('failed');
    expect(done.problem.code).toBe('IMPORT_COLUMNS_UNKNOWN');
    expect(done.problem.detail).toContain('"colour"');
  });

  it('refuses an upload past files.max_bytes, of no known format, or from a caller who may not create', async () => {
    const big = await upload(writer, TASKS, `title\n${'x'.repeat(MAX_BYTES)}\n`);
    expect(big.status).toBe(413);
    expect(big.body.code).toBe('FILE_TOO_LARGE');
    const unknown = await upload(writer, TASKS, 'x', { name: 'rows.xlsx', type: 'application/octet-stream' });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('IMPORT_FORMAT_UNKNOWN');
    const refused = await upload(reader, TASKS, `title\nx\n`);
    expect(refused.status).toBe(403);
  });

  it('its status is read by who may create in its list only, and an unknown id is 404', async () => {
    const res = await upload(writer, TASKS, `title,priority,deadline\nx,low,${deadline}\n`);
    await finished(writer, res.headers.location as string);
    const other = await t.app
      .http(HOST)
      .get(res.headers.location as string)
      .set('Cookie', reader.cookie);
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('AUTH_FORBIDDEN');
    // The OpenAPI document says so: the status route answers 403 as well as 404.
    const document = await t.app.http(HOST).get('/api/v1/openapi.json');
    const responses = document.body.paths['/api/v1/imports/{id}'].get.responses;
    expect(Object.keys(responses)).toEqual(expect.arrayContaining(['200', '403', '404']));
    expect(responses['403'].description).toContain('AUTH_FORBIDDEN');
    const unknown = await t.app.http(HOST).get(`/api/v1/imports/${randomUUID()}`).set('Cookie', writer.cookie);
    expect(unknown.status).toBe(404);
    // An id that is not a UUID is the same 404 as any id that is not there (docs/api-conventions.md).
    const notUuid = await t.app.http(HOST).get('/api/v1/imports/not-a-uuid').set('Cookie', writer.cookie);
    expect(notUuid.status, JSON.stringify(notUuid.body)).toBe(404);
    expect({ ...notUuid.body, requestId: undefined }).toEqual({ ...unknown.body, requestId: undefined });
  });
});
