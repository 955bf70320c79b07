import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { startService, stopService } from './processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { startS3Server, type S3Server } from '../helpers/s3.ts';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { form } from '../modules/file/helpers.ts';
import { allModules } from '../../modules/index.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Tenantry as it runs behind a load balancer: two web processes (A and B, each on its own port)
 * and two worker processes, started as `npm run start:web` / `start:worker` start them, on one
 * PostgreSQL and one bucket (s3rver), configured through TENANTRY_* variables. Everything is
 * observed from outside: HTTP answers, the database, the bucket.
 */

const OPERATOR_HOST = 'operator.localhost';
const SITE = 'multi.localhost';
const PAUSED = 'paused.localhost';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  json: () => { code?: string; [key: string]: unknown };
}

interface Call {
  method?: string;
  path: string;
  host: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
  agent?: Agent;
}

function call(base: string, { method = 'GET', path, host, headers = {}, body, agent }: Call): Promise<Answer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname,
        port,
        method,
        path,
        agent: agent ?? false,
        headers: {
          host,
          ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const all = Buffer.concat(chunks);
          resolve({ status: res.statusCode!, headers: res.headers, body: all, json: () => JSON.parse(all.toString()) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

let databaseUrl: string;
let bucket: S3Server;
let setup: TestApp;
let site: TenantRef;
let paused: TenantRef;
let siteCookie: string;
let operatorCookie: string;
let db: pg.Client;
const web: { url: string; child: ChildProcess; log: () => string }[] = [];
const workers: { child: ChildProcess; log: () => string }[] = [];
let workersStartedAt = 0;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  bucket = await startS3Server();
  // Migrations and the data the test needs, through an in-process app (no worker) on the same
  // database; the four processes then start on a migrated database, as a deployment's do after
  // the first.
  setup = await startTestApp({
    databaseUrl,
    modules: allModules,
    config: testConfig({ files: { storage: 's3', s3: bucket.settings() } }),
  });
  site = await createCustomer(setup, 'multi', SITE);
  paused = await createCustomer(setup, 'paused', PAUSED);
  siteCookie = (await signInAs(setup, site, ['file:read', 'file:manage', 'content:read', 'content:manage'])).cookie;
  operatorCookie = (await signInAs(setup, setup.operator, ['tenant:manage'])).cookie;
  await setup.close();
  db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();

  // What each process is given: the same configuration file (config.yaml) and these variables.
  const settings = {
    TENANTRY_DATABASE_URL: databaseUrl,
    TENANTRY_DATABASE_POOL_SIZE: '4',
    TENANTRY_SERVER_PORT: '0',
    TENANTRY_SERVER_PUBLIC_HOST: OPERATOR_HOST,
    TENANTRY_SERVER_LOG_LEVEL: 'info',
    ...bucket.env(),
  };
  const started = await Promise.all([
    startService(settings, 60_000, 'web'),
    startService(settings, 60_000, 'web'),
    startService(settings, 60_000, 'worker'),
    startService(settings, 60_000, 'worker'),
  ]);
  workersStartedAt = Date.now();
  web.push(started[0]!, started[1]!);
  workers.push(started[2]!, started[3]!);
}, 90_000);

afterAll(async () => {
  await Promise.allSettled([...web, ...workers].map((p) => stopService(p.child)));
  await db?.end();
  await bucket?.close();
});

const A = () => web[0]!.url;
const B = () => web[1]!.url;

describe('two web and two worker processes on one PostgreSQL and one bucket', () => {
  it('each web process listens on its own port; the workers serve no HTTP', () => {
    expect(A()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(B()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(A()).not.toBe(B());
    expect(workers.map((w) => w.log().includes('worker started'))).toEqual([true, true]);
  });

  it('a file uploaded through web A downloads through web B, whole and by range', async () => {
    const content = Buffer.from('bytes that went to the bucket through A');
    const { body, type } = form([{ name: 'file', filename: 'shared.txt', type: 'text/plain', content }]);
    const up = await call(A(), {
      method: 'POST',
      path: '/api/v1/file/files?visibility=private',
      host: SITE,
      headers: { cookie: siteCookie, 'content-type': type },
      body,
    });
    expect(up.status, up.body.toString()).toBe(201);
    const id = up.json().id as string;
    const whole = await call(B(), {
      path: `/api/v1/file/files/${id}/content`,
      host: SITE,
      headers: { cookie: siteCookie },
    });
    expect(whole.status).toBe(200);
    expect(whole.body.equals(content)).toBe(true);
    expect(whole.headers.etag).toBe(`"${createHash('sha256').update(content).digest('hex')}"`);
    const part = await call(B(), {
      path: `/api/v1/file/files/${id}/content`,
      host: SITE,
      headers: { cookie: siteCookie, range: 'bytes=6-11' },
    });
    expect([part.status, part.body.toString()]).toEqual([206, 'that w']);
  });

  it('suspending a tenant through A makes B answer no-site within 1 s', async () => {
    // B has resolved the host (and holds it in its cache).
    for (const base of [A(), B()])
      expect((await call(base, { path: '/api/v1/auth/me', host: PAUSED })).json().code).toBe('AUTH_REQUIRED');
    const suspend = await call(A(), {
      method: 'POST',
      path: `/api/v1/tenant/tenants/${paused.id}/suspend`,
      host: OPERATOR_HOST,
      headers: { cookie: operatorCookie },
    });
    expect(suspend.status, suspend.body.toString()).toBe(200);
    const suspendedAt = Date.now();
    expect((await call(A(), { path: '/api/v1/auth/me', host: PAUSED })).json().code).toBe('NO_SITE');
    await until(
      'B to answer no-site',
      async () => (await call(B(), { path: '/api/v1/auth/me', host: PAUSED })).json().code === 'NO_SITE',
      5_000,
    );
    expect(Date.now() - suspendedAt).toBeLessThan(1000);
  });

  it('the login limit counts attempts sent to A and B together: 10 across both, then 429', async () => {
    // One client address (a proxy on loopback names it), ten failed sign-ins, alternating processes.
    const attempt = (base: string) =>
      call(base, {
        method: 'POST',
        path: '/api/v1/auth/login',
        host: SITE,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '198.51.100.30' },
        body: JSON.stringify({ email: 'nobody@multi.example', password: 'not the password' }),
      });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await attempt(i % 2 === 0 ? A() : B())).status);
    expect(statuses).toEqual(Array(10).fill(401));
    const [fromA, fromB] = [await attempt(A()), await attempt(B())];
    expect([fromA.status, fromA.json().code]).toEqual([429, 'ErrTooManyAttempts']);
    expect([fromB.status, fromB.json().code]).toEqual([429, 'ErrTooManyAttempts']);
  });

  it("a public page held in B's 304 cache is evicted by an unpublish through A", async () => {
    const json = { cookie: siteCookie, 'content-type': 'application/json' };
    const created = await call(A(), {
      method: 'POST',
      path: '/api/v1/content/contents',
      host: SITE,
      headers: json,
      body: JSON.stringify({ slug: 'about-us', title: 'About us', kind: 'page', body: '# About us' }),
    });
    expect(created.status, created.body.toString()).toBe(201);
    const id = created.json().id as string;
    expect(
      (
        await call(A(), {
          method: 'POST',
          path: `/api/v1/content/contents/${id}/publish`,
          host: SITE,
          headers: json,
          body: '{}',
        })
      ).status,
    ).toBe(200);
    const page = await call(B(), { path: '/api/v1/content/public/about-us', host: SITE });
    expect(page.status).toBe(200);
    const etag = page.headers.etag as string;
    // Held: B answers the conditional request 304 (from its cache, for up to its 60 s TTL).
    expect(
      (await call(B(), { path: '/api/v1/content/public/about-us', host: SITE, headers: { 'if-none-match': etag } }))
        .status,
    ).toBe(304);
    expect(
      (
        await call(A(), {
          method: 'POST',
          path: `/api/v1/content/contents/${id}/unpublish`,
          host: SITE,
          headers: json,
          body: '{}',
        })
      ).status,
    ).toBe(200);
    const unpublishedAt = Date.now();
    await until(
      'B to stop answering 304',
      async () =>
        (await call(B(), { path: '/api/v1/content/public/about-us', host: SITE, headers: { 'if-none-match': etag } }))
          .status === 404,
      5_000,
    );
    expect(Date.now() - unpublishedAt).toBeLessThan(1000);
  });

  it('across the two workers each event reaches each subscription exactly once (audit rows = events)', async () => {
    // Twenty events: ten files uploaded and deleted, half through each process; each file.deleted
    // goes to the blob removal subscription.
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const { body, type } = form([
        { name: 'file', filename: `f${i}.bin`, type: 'application/octet-stream', content: `file ${i}` },
      ]);
      const up = await call(i % 2 ? B() : A(), {
        method: 'POST',
        path: '/api/v1/file/files?visibility=private',
        host: SITE,
        headers: { cookie: siteCookie, 'content-type': type },
        body,
      });
      expect(up.status).toBe(201);
      ids.push(up.json().id as string);
    }
    for (const [i, id] of ids.entries()) {
      expect(
        (
          await call(i % 2 ? A() : B(), {
            method: 'DELETE',
            path: `/api/v1/file/files/${id}`,
            host: SITE,
            headers: { cookie: siteCookie },
          })
        ).status,
      ).toBe(204);
    }
    // Every event relayed, every subscription job settled.
    await until(
      'the workers to relay and deliver everything',
      async () => {
        const { rows } = await db.query<{ pending: number }>(
          `select (select count(*) from outbox where relayed_at is null)
                + (select count(*) from pgboss.job where name like 'sub-%' and state in ('created', 'retry', 'active')) as pending`,
        );
        return Number(rows[0]!.pending) === 0;
      },
      15_000,
    );
    const one = async (sql: string) => (await db.query(sql)).rows;
    // Audit rows = events: every event of the outbox, once, in its own tenant's trail; besides,
    // an operator's event about a customer tenant (the suspension above) is recorded in that
    // tenant's trail too, as the operator's (ModuleDefinition.operatorEventsAbout), and nothing else.
    const [counts] =
      await one(`select (select count(*) from outbox)::int as events, (select count(*) from audit_events)::int as audited,
                                       (select count(*) from outbox o join audit_events a using (tenant_id, event_id))::int as matched,
                                       (select count(*) from audit_events a
                                         where a.actor_kind = 'operator'
                                           and exists (select 1 from outbox o where o.event_id = a.event_id and o.tenant_id <> a.tenant_id)
                                           and not exists (select 1 from outbox o where o.event_id = a.event_id and o.tenant_id = a.tenant_id))::int as copies`);
    expect(counts.audited).toBe(counts.events + counts.copies);
    expect(counts.matched).toBe(counts.events);
    // Each subscription received each of its events once: one job per (queue, event), completed.
    const deliveries =
      await one(`select name as queue, data->>'id' as event, count(*)::int as jobs, array_agg(state::text) as states
                                    from pgboss.job where name like 'sub-%' group by 1, 2`);
    expect(deliveries.length).toBeGreaterThanOrEqual(10);
    expect(deliveries.filter((d) => d.jobs !== 1 || d.states[0] !== 'completed')).toEqual([]);
    const deleted = await one(`select event_id::text as event from outbox where name = 'file.deleted'`);
    expect(deleted).toHaveLength(10);
    const removal = deliveries
      .filter((d) => d.queue === 'sub-file-blob-removal')
      .map((d) => d.event)
      .sort();
    expect(removal).toEqual(deleted.map((d) => d.event).sort());
    expect(
      (await one(`select count(*)::int as n from processed_events where subscription = 'file-blob-removal'`))[0].n,
    ).toBe(10);
    // The bucket holds exactly the blobs rows name.
    const named = (await one('select storage_key::text as key from files')).map((r) => `${r.key}`).sort();
    expect(await bucket.keys()).toEqual(named);
  }, 20_000);

  it('SIGTERM to web A under a load of 32 connections: in-flight requests complete, none fails on B, A closes its keep-alive connections with Connection: close', async () => {
    const outcome = await loadWhileStopping(A(), B(), web[0]!.child);
    expect(outcome.exitCode).toBe(0);
    // No request failed on B.
    expect(
      outcome.onB.filter((r) => r.status !== 200),
      'requests to B that failed',
    ).toEqual([]);
    // A answered every request it read, in flight at the signal or after it, in full and with 200.
    expect(
      outcome.onA.filter((r) => r.status !== undefined && r.status !== 200),
      'answers of A other than 200',
    ).toEqual([]);
    expect(outcome.onA.filter((r) => r.status !== undefined && r.sentAt < outcome.killedAt).length).toBeGreaterThan(0);
    expect(outcome.onA.filter((r) => r.status !== undefined && r.doneAt > outcome.killedAt).length).toBeGreaterThan(0);
    // What A never read (a request on a connection it was closing as idle, or a new connection
    // after it stopped listening) got no byte of an answer; a load balancer sends it elsewhere.
    for (const failed of outcome.onA.filter((r) => r.status === undefined)) {
      expect(failed.error).toMatch(/ECONNRESET|ECONNREFUSED|socket hang up/);
      expect(failed.retried).toBe(200);
    }
    // A closed each keep-alive connection: its last answer on it said Connection: close, or it was
    // idle and A closed it (the next request found it gone). No answer before the signal said close.
    expect(
      outcome.lanes.every((lane) => lane.endedBy === 'close' || lane.endedBy === 'gone'),
      JSON.stringify(outcome.lanes),
    ).toBe(true);
    expect(outcome.lanes.filter((lane) => lane.endedBy === 'close').length).toBeGreaterThan(0);
    expect(outcome.onA.filter((r) => r.connection === 'close' && r.doneAt < outcome.killedAt)).toEqual([]);
  }, 20_000);

  it('each cron job runs once per tick across the two workers', async () => {
    const one = async (sql: string) => (await db.query(sql)).rows;
    // Both workers run pg-boss's cron pass (every 30 s, the first as they start); the every-minute
    // SLA sweep is due at every pass, so its tick has run within about 40 s of the workers' start.
    await until(
      'a tick of the SLA sweep to run',
      async () => {
        const { rows } = await db.query(
          `select 1 from pgboss.job where name = 'job-task-sla-sweep' and state = 'completed'`,
        );
        return rows.length > 0;
      },
      Math.max(1000, workersStartedAt + 45_000 - Date.now()),
    );
    // Each job's tick was sent once per slot, and each per-tenant run of a tick ran once.
    const ticks = await one(`select name, date_trunc('minute', created_on) as slot, count(*)::int as n
                               from pgboss.job where name like 'job-%' and name not like '%/tenant' group by 1, 2`);
    expect(ticks.filter((t) => t.n !== 1)).toEqual([]);
    const runs = await one(`select name, data->>'tenantId' as tenant, data->>'slot' as slot, count(*)::int as n
                              from pgboss.job where name like 'job-%/tenant' group by 1, 2, 3`);
    expect(runs.length).toBeGreaterThan(0);
    expect(runs.filter((r) => r.n !== 1)).toEqual([]);
  }, 45_000);
});

interface Sent {
  sentAt: number;
  doneAt: number;
  status?: number;
  connection?: string;
  error?: string;
  /** A request A never read, sent again to B (as a load balancer does). */
  retried?: number;
}

/**
 * 32 keep-alive connections, 16 to each web process, each sending the next request as soon as the
 * last is answered. After 1.5 s web A gets SIGTERM; a connection to A that is answered with
 * Connection: close, or is refused, moves to B (what a load balancer does). 1.5 s later the load
 * stops.
 */
async function loadWhileStopping(
  a: string,
  b: string,
  child: ChildProcess,
): Promise<{
  onA: Sent[];
  onB: Sent[];
  lanes: { endedBy?: 'close' | 'gone' }[];
  killedAt: number;
  exitCode: number | null;
}> {
  const onA: Sent[] = [];
  const onB: Sent[] = [];
  const lanes: { endedBy?: 'close' | 'gone' }[] = [];
  let killedAt = Number.POSITIVE_INFINITY;
  let stop = false;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const agents = {
    a: new Agent({ keepAlive: true, maxSockets: 16 }),
    b: new Agent({ keepAlive: true, maxSockets: 16 }),
  };
  const get = (base: string, agent: Agent) =>
    call(base, { path: '/api/v1/file/files?limit=5', host: SITE, headers: { cookie: siteCookie }, agent });
  const lane = async (startOnA: boolean) => {
    let onFirst = startOnA;
    const state: { endedBy?: 'close' | 'gone' } = {};
    if (startOnA) lanes.push(state);
    while (!stop) {
      const sent: Sent = { sentAt: Date.now(), doneAt: 0 };
      (onFirst ? onA : onB).push(sent);
      try {
        const res = await get(onFirst ? a : b, onFirst ? agents.a : agents.b);
        Object.assign(sent, { doneAt: Date.now(), status: res.status, connection: res.headers.connection });
        if (onFirst && res.headers.connection === 'close') {
          onFirst = false;
          state.endedBy = 'close';
        }
      } catch (err) {
        sent.doneAt = Date.now();
        sent.error = (err as Error).message;
        if (onFirst) {
          onFirst = false;
          state.endedBy = 'gone';
          sent.retried = (await get(b, agents.b)).status;
        }
      }
    }
  };
  const running = [...Array.from({ length: 16 }, () => lane(true)), ...Array.from({ length: 16 }, () => lane(false))];
  await sleep(1500);
  killedAt = Date.now();
  child.kill('SIGTERM');
  await sleep(1500);
  stop = true;
  await Promise.all(running);
  agents.a.destroy();
  agents.b.destroy();
  return { onA, onB, lanes, killedAt, exitCode: await exited };
}
