import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { useTestApp } from '../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { EntityOperations } from '../../framework/operations/entity-ops.ts';
import { entityExport } from '../../framework/bulk/list-export/entity-export.ts';
import { csvHeader, csvRows } from '../../framework/bulk/list-export/csv.ts';

/**
 * Issue 48, point 2: every list answers Accept: text/csv or ?format=csv, and application/x-ndjson
 * or ?format=ndjson, with every row its filters, sort and fields= give (not a page), as a
 * download; CSV by RFC 4180 and safe in a spreadsheet; batches read by keyset in short
 * transactions of their own; an Accept the route cannot give is 406 NOT_ACCEPTABLE.
 */

const t = useTestApp({ customers: ['acme'] });
const HOST = 'acme.localhost';
const TASKS = '/api/v1/task/tasks';
const WIDGETS = '/api/v1/testkit/widgets';
let reader: SignedIn;
let other: SignedIn;

const HYPERLINK = '=HYPERLINK("http://evil.example","click")';
const sql = (text: string, params: unknown[] = []) =>
  t.app.services.transactions.run(t.acme, (ctx) => ctx.db.executeQuery(CompiledQuery.raw(text, params)));

beforeAll(async () => {
  reader = await signInAs(t.app, t.acme, ['task:read', 'widget:read', 'widget:write', 'role:manage']);
  other = await signInAs(t.app, t.acme, ['widget:read', 'widget:write']);
  await sql(
    `insert into tasks (title, priority, deadline)
     select 'task ' || lpad(i::text, 2, '0'), ($1::text[])[1 + i % 4], timestamptz '2031-03-01T00:00:00Z' + i * interval '1 day'
       from generate_series(1, 40) i`,
    [['low', 'medium', 'high', 'critical']],
  );
  await sql(`insert into tasks (title, priority, deadline) values ($1, 'high', '2031-04-01T00:00:00Z')`, [HYPERLINK]);
  // Notes a spreadsheet would run, and notes RFC 4180 quotes.
  await sql(
    `insert into widgets (name, size, color, note) values
       ('plus', 1, 'tricky', '+1 more'), ('minus', 2, 'tricky', '-2 less'), ('at', 3, 'tricky', '@SUM(A1)'),
       ('tab', 4, 'tricky', E'\\tx'), ('cr', 5, 'tricky', E'\\rx'), ('quotes', 6, 'tricky', 'a, "b"' || E'\\n' || 'c'),
       ('none', 7, 'tricky', null)`,
  );
  // Two and a half batches of widgets.
  await sql(
    `insert into widgets (name, size, color) select 'bulk ' || i, (i * 7919) % 1000, 'bulk' from generate_series(1, 2500) i`,
  );
  await sql(`insert into memos (owner_id, text) values ($1, 'mine 1'), ($1, 'mine 2'), ($2, 'theirs')`, [
    reader.userId,
    other.userId,
  ]);
});

const get = (path: string, who: SignedIn = reader) => t.app.http(HOST).get(path).set('Cookie', who.cookie);

/** RFC 4180: records of fields, quoted fields holding commas, doubled quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else field += c;
  }
  expect(field, 'the last record ends with CRLF').toBe('');
  return records;
}

const csvOf = async (path: string, who: SignedIn = reader) => {
  const res = await get(path, who);
  expect(res.status, `${path}: ${res.text}`).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/csv; charset=utf-8/);
  const [header, ...rows] = parseCsv(res.text);
  return { header: header!, rows: rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!]))), res };
};

/** Every item of the JSON list, page by page. */
async function allItems(query: string): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let after: string | null | undefined;
  do {
    const res = await get(`${TASKS}?${query}&limit=100${after ? `&after=${after}` : ''}`);
    expect(res.status).toBe(200);
    items.push(...res.body.items);
    after = res.body.next;
  } while (after);
  return items;
}

describe('a filtered list as CSV', () => {
  it('holds exactly the rows of the filtered list, in its order, and a formula title comes out prefixed', async () => {
    const { header, rows, res } = await csvOf(`${TASKS}?format=csv&priority=eq.high&sort=title`);
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="tasks-\d{4}-\d{2}-\d{2}\.csv"$/);
    const listed = await allItems('priority=eq.high&sort=title');
    expect(listed.length).toBe(11);
    expect(rows.map((r) => r.id)).toEqual(listed.map((item) => item.id));
    expect(header[0]).toBe('id');
    expect(header).toEqual(expect.arrayContaining(['title', 'priority', 'deadline', 'createdAt', 'updatedAt']));
    expect(rows[0]!.title).toBe(`'${HYPERLINK}`);
    expect(rows.every((r) => r.priority === 'high')).toBe(true);
    expect(rows[1]!.deadline).toBe(listed[1]!.deadline);
  });

  it('Accept: text/csv answers the same as format=csv', async () => {
    const byFormat = await get(`${TASKS}?format=csv&priority=eq.low`);
    const byAccept = await get(`${TASKS}?priority=eq.low`).set('Accept', 'text/csv');
    expect(byAccept.status).toBe(200);
    expect(byAccept.headers['content-type']).toMatch(/^text\/csv/);
    expect(byAccept.text).toBe(byFormat.text);
  });

  it('keeps the fields fields= names (id always first)', async () => {
    const { header, rows } = await csvOf(`${TASKS}?format=csv&fields=title,priority&priority=eq.medium`);
    expect(header).toEqual(['id', 'title', 'priority']);
    expect(rows).toHaveLength(10);
  });

  it('follows RFC 4180 and prefixes cells a spreadsheet would run', async () => {
    const res = await get(`${WIDGETS}?format=csv&color=eq.tricky&sort=size&fields=name,note,size`);
    expect(res.status).toBe(200);
    const [, ...records] = parseCsv(res.text);
    expect(records.map((r) => [r[1], r[2]])).toEqual([
      ['plus', "'+1 more"],
      ['minus', "'-2 less"],
      ['at', "'@SUM(A1)"],
      ['tab', "'\tx"],
      ['cr', "'\rx"],
      ['quotes', 'a, "b"\nc'],
      ['none', ''],
    ]);
    // The quoted cell as written: enclosed, its quotes doubled; a number is not text, never prefixed.
    expect(res.text).toContain('"a, ""b""\nc"');
    expect(records.map((r) => r[3])).toEqual(['1', '2', '3', '4', '5', '6', '7']);
  });
});

describe('every row, in batches', () => {
  it('sends all 2,500 matching rows (more than two batches) once each, in the sort asked for', async () => {
    const { rows } = await csvOf(`${WIDGETS}?format=csv&color=eq.bulk&sort=size`);
    expect(rows).toHaveLength(2500);
    expect(new Set(rows.map((r) => r.id)).size).toBe(2500);
    const sizes = rows.map((r) => Number(r.size));
    expect(sizes).toEqual([...sizes].sort((a, b) => a - b));
  });

  it('as NDJSON: one JSON object a line, the list items as the JSON list gives them', async () => {
    const res = await get(`${TASKS}?format=ndjson&priority=eq.critical&sort=title`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    expect(res.headers['content-disposition']).toMatch(/filename="tasks-.*\.ndjson"/);
    const lines = res.text
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual(await allItems('priority=eq.critical&sort=title'));
    const byAccept = await get(`${TASKS}?priority=eq.critical&sort=title`).set('Accept', 'application/x-ndjson');
    expect(byAccept.text).toBe(res.text);
  });

  it('counts owner-only rows for their owner only', async () => {
    const { rows } = await csvOf('/api/v1/testkit/memos?format=csv');
    expect(rows.map((r) => r.text).sort()).toEqual(['mine 1', 'mine 2']);
  });

  it('a hand-written list exports too (the roles)', async () => {
    const listed = await get('/api/v1/auth/roles?limit=100');
    const { rows } = await csvOf('/api/v1/auth/roles?format=csv');
    expect(rows.map((r) => r.name)).toEqual(listed.body.items.map((r: { name: string }) => r.name));
  });
});

describe('refusals', () => {
  it('an Accept the route cannot give is 406 NOT_ACCEPTABLE, as a problem', async () => {
    const item = await get(`${TASKS}/00000000-0000-4000-8000-000000000000`).set('Accept', 'text/csv');
    expect(item.status).toBe(406);
    expect(item.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(item.body).toMatchObject({ code: 'NOT_ACCEPTABLE', accepts: ['application/json'] });
    const list = await get(TASKS).set('Accept', 'text/html');
    expect(list.status).toBe(406);
    expect(list.body.accepts).toEqual(['application/json', 'text/csv', 'application/x-ndjson']);
    const zero = await get(TASKS).set('Accept', 'text/csv;q=0, application/xml');
    expect(zero.status).toBe(406);
  });

  it('what takes JSON gets JSON: no Accept, */*, application/*, a browser’s', async () => {
    for (const accept of ['*/*', 'application/*', 'application/json', 'text/html,application/xhtml+xml,*/*;q=0.8']) {
      const res = await get(`${TASKS}?limit=1`).set('Accept', accept);
      expect(res.status, accept).toBe(200);
      expect(res.headers['content-type'], accept).toMatch(/^application\/json/);
    }
    const preferred = await get(`${TASKS}?limit=1`).set('Accept', 'application/json;q=0.5, text/csv');
    expect(preferred.headers['content-type']).toMatch(/^text\/csv/);
  });

  it('a refused filter or format is 422 before any row is sent; no permission is 403', async () => {
    const filter = await get(`${TASKS}?format=csv&priority=eq.urgent`);
    expect(filter.status).toBe(422);
    expect(filter.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    const format = await get(`${TASKS}?format=xml`);
    expect(format.status).toBe(422);
    const denied = await get(`${TASKS}?format=csv`, other);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ code: 'AUTH_FORBIDDEN' });
  });
});

describe('lines written by PostgreSQL', () => {
  // Cells csv.ts would prefix or quote, a control character JSON escapes, a time with microseconds.
  const WRITTEN = [
    ['=1+1', 1, '@home', true, '2031-01-02T03:04:05.678901Z'],
    ['a "quoted", name', 2, 'line\r\nbreak', false, null],
    ['-minus', 3, null, false, null],
    ['tab\there', 4, 'bell \u0007 and é ✓', true, '2031-12-31T23:59:59.999999Z'],
    ['plain', 5, '\tlead', false, null],
  ] as const;

  beforeAll(async () => {
    for (const [name, size, note, approved, approvedAt] of WRITTEN) {
      await sql(
        `insert into widgets (name, size, color, note, approved, approved_at) values ($1, $2, 'written', $3, $4, $5)`,
        [name, size, note, approved, approvedAt],
      );
    }
  });

  /** Every item of the widgets' JSON list with these filters, page by page. */
  async function widgetItems(query: string): Promise<Record<string, unknown>[]> {
    const items: Record<string, unknown>[] = [];
    let after: string | null | undefined;
    do {
      const res = await get(`${WIDGETS}?${query}&limit=2${after ? `&after=${after}` : ''}`);
      expect(res.status).toBe(200);
      items.push(...res.body.items);
      after = res.body.next;
    } while (after);
    return items;
  }

  it('a generated list of stored columns comes back from PostgreSQL as one text per batch', async () => {
    const entity = t.app.services.registry.entities.find((e) => e.names.key === 'testkit.widget')!;
    const ops = new EntityOperations(entity, { config: t.app.services.config });
    const walk = entityExport(entity, ops, (_tx, row) => row).open(
      { color: 'eq.written', sort: 'size' },
      new Date(),
      {},
    );
    const [csv, ndjson] = await t.app.services.transactions.run(t.acme, async (tx) => [
      await walk.batch(tx, undefined, 3, 'csv'),
      await walk.batch(tx, undefined, 3, 'ndjson'),
    ]);
    // Three records (one holds a quoted line break), and three lines, no header: the export writes that.
    expect('text' in csv && parseCsv(csv.text).map((r) => r[1])).toEqual(["'=1+1", 'a "quoted", name', "'-minus"]);
    expect('text' in ndjson && ndjson.text.split('\n')).toHaveLength(4);
    expect(csv.next).not.toBeNull();
  });

  it('writes the very text csv.ts writes from the rows, across batches', async () => {
    const items = await widgetItems('color=eq.written&sort=-size');
    expect(items).toHaveLength(WRITTEN.length);
    const columns = Object.keys(items[0]!);
    const res = await get(`${WIDGETS}?format=csv&color=eq.written&sort=-size`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(csvHeader(columns) + csvRows(items, columns));
    const some = await get(`${WIDGETS}?format=csv&color=eq.written&sort=name&fields=note,approvedAt,name`);
    const named = await widgetItems('color=eq.written&sort=name');
    const picked = ['id', 'note', 'approvedAt', 'name'];
    expect(some.text).toBe(csvHeader(picked) + csvRows(named, picked));
  });

  it('writes the very NDJSON lines JSON.stringify writes from the list items', async () => {
    const items = await widgetItems('color=eq.written&sort=name');
    const res = await get(`${WIDGETS}?format=ndjson&color=eq.written&sort=name`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(items.map((item) => `${JSON.stringify(item)}\n`).join(''));
  });
});

describe('short transactions', () => {
  let base: { port: number };
  beforeAll(async () => {
    // 30,000 rows of about 600 bytes: far more than the socket buffers hold, so a paused reader stops the walk.
    await sql(
      `insert into widgets (name, size, color, note)
       select 'slow ' || i, i % 1000, 'slow', repeat('x', 450) from generate_series(1, 30000) i`,
    );
    await t.app.web!.listen({ host: '127.0.0.1', port: 0 });
    base = { port: (t.app.web!.server.address() as AddressInfo).port };
  });
  afterAll(async () => {
    await t.app.web!.close();
  });

  /** The app's connections idle inside a transaction, as the database's owner sees them. */
  const idleInTransaction = async () => {
    const owner = new pg.Client({ connectionString: t.app.databaseUrl });
    await owner.connect();
    try {
      const res = await owner.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid() and state like 'idle in transaction%'`,
      );
      return res.rows[0]!.n;
    } finally {
      await owner.end();
    }
  };

  it('holds no transaction open while the client is slow to read', async () => {
    const lines = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: base.port,
          path: `${WIDGETS}?format=csv&color=eq.slow`,
          headers: { host: HOST, cookie: reader.cookie },
        },
        (res) => {
          expect(res.statusCode).toBe(200);
          let count = 0;
          let paused = false;
          res.on('data', (chunk: Buffer) => {
            for (const byte of chunk) if (byte === 0x0a) count++;
            if (paused) return;
            paused = true;
            res.pause();
            // The client reads nothing for a while: the server's writes back up, the walk waits.
            setTimeout(async () => {
              try {
                expect(res.complete).toBe(false);
                expect(await idleInTransaction()).toBe(0);
                res.resume();
              } catch (err) {
                reject(err);
              }
            }, 1000);
          });
          res.on('end', () => resolve(count));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(lines).toBe(30001);
  });
});
