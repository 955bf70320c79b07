import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { freePort } from '../helpers/ports.ts';
import { sampleValue, scrape } from '../helpers/metrics.ts';
import { startReplicatedPair, type ReplicatedPair } from '../helpers/replica.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { ensureDatabase } from '../../framework/db/embedded.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * A read replica for what may lag (issue 49, point 2), against a real streaming replica of a
 * PostgreSQL of the test's own (test/helpers/replica.ts). The marker that the replica served a
 * read: with its replay paused (pg_wal_replay_pause()), a row changed on the primary still reads
 * as it was, and one created there is not found, while the primary (a list that stays on it, or
 * the test's own query) shows the change committed. Only a server that has not replayed the
 * change can answer that: the replica. (Its statistics are no marker: a backend sends them late.)
 *
 * Two apps on the same database: `relaxed` lets the replica lag a minute (so a paused replica
 * still serves), `strict` 300 ms (so a paused replica is soon left for the primary).
 */

const HOST = 'acme.localhost';
let pair: ReplicatedPair;
let relaxed: TestApp;
let strict: TestApp;
let without: TestApp;
/** Between `strict` and the replica: frozen, the replica stops answering `strict`. */
let proxy: TcpProxy;
let acme: TenantRef;
let writer: SignedIn;
let primary: pg.Client;
let replica: pg.Client;

beforeAll(async () => {
  pair = await startReplicatedPair();
  const url = await ensureDatabase(pair.primary.adminUrl, 'replica_reads');
  const replicaUrl = pair.replicaUrlOf(url);
  relaxed = await startTestApp({
    databaseUrl: url,
    config: testConfig({
      database: { url, replica_url: replicaUrl, replica_max_lag_ms: 60_000 },
      metrics: { port: await freePort() },
    }),
  });
  proxy = await startTcpProxy(Number(new URL(replicaUrl).port));
  const proxied = new URL(replicaUrl);
  proxied.port = String(proxy.port);
  strict = await startTestApp({
    databaseUrl: url,
    config: testConfig({
      database: { url, replica_url: proxied.toString(), replica_max_lag_ms: 300 },
      metrics: { port: await freePort() },
    }),
  });
  // The same database, no replica configured.
  without = await startTestApp({ databaseUrl: url, config: testConfig({ database: { url } }) });
  acme = await createCustomer(relaxed, 'acme');
  writer = await signInAs(relaxed, acme, ['content:read', 'content:manage']);
  primary = new pg.Client({ connectionString: url });
  await primary.connect();
  replica = new pg.Client({ connectionString: replicaUrl });
  await replica.connect();
}, 120_000);

afterAll(async () => {
  await replica?.end();
  await primary?.end();
  await without?.close();
  await strict?.close();
  await relaxed?.close();
  await proxy?.close();
  await pair?.stop();
});

const json = () => ({ cookie: writer.cookie, 'content-type': 'application/json' });

async function publishedContent(app: TestApp, slug: string, title: string): Promise<string> {
  const created = await app
    .http(HOST)
    .post('/api/v1/content/contents')
    .set(json())
    .send({ slug, title, kind: 'page', body: `# ${title}` });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const published = await app
    .http(HOST)
    .post(`/api/v1/content/contents/${created.body.id}/publish`)
    .set(json())
    .send({});
  expect(published.status, JSON.stringify(published.body)).toBe(200);
  return created.body.id as string;
}

const retitle = async (app: TestApp, id: string, title: string) => {
  const res = await app.http(HOST).patch(`/api/v1/content/contents/${id}`).set(json()).send({ title });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
};

const publicTitle = async (app: TestApp, slug: string) => {
  const res = await app.http(HOST).get(`/api/v1/content/public/${slug}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.title as string;
};

async function metric(app: TestApp, name: string, labels: Record<string, string> = {}): Promise<number> {
  return sampleValue((await scrape(app.metricsUrl!)).samples, name, labels) ?? 0;
}

async function until(what: string, condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Replay resumed, everything replayed, and both apps reading from the replica again. */
async function replicaCurrent(): Promise<void> {
  await pair.resumeReplay();
  await pair.caughtUp();
  for (const app of [relaxed, strict])
    await until('the replica in use', async () => (await metric(app, 'tenantry_db_replica_in_use')) === 1);
}

describe('a public read declared to read from the replica', () => {
  it('is served by the replica: with its replay paused, a change on the primary is not seen yet', async () => {
    const id = await publishedContent(relaxed, 'hello', 'First');
    await replicaCurrent();
    expect(await publicTitle(relaxed, 'hello')).toBe('First');
    await pair.pauseReplay();
    try {
      await retitle(relaxed, id, 'Second');
      const committed = await primary.query<{ title: string }>(`select title from contents where id = $1`, [id]);
      expect(committed.rows[0]!.title).toBe('Second');
      expect(await publicTitle(relaxed, 'hello')).toBe('First');
      // The HTML page reads the same way.
      const page = await relaxed.http(HOST).get('/p/hello');
      expect(page.status).toBe(200);
      expect(page.text).toContain('First');
      expect(page.text).not.toContain('Second');
      // The primary has the change: a list (which stays on the primary) shows it.
      const list = await relaxed.http(HOST).get('/api/v1/content/contents?limit=50').set('cookie', writer.cookie);
      expect(list.body.items.find((c: { id: string }) => c.id === id).title).toBe('Second');
    } finally {
      await replicaCurrent();
    }
    expect(await publicTitle(relaxed, 'hello')).toBe('Second');
  });
});

describe('summaries and exports, which may lag', () => {
  it('are served by the replica: with its replay paused, a row created on the primary is in neither yet', async () => {
    await publishedContent(relaxed, 'summed-before', 'Counted');
    await replicaCurrent();
    const summary = async () => {
      const res = await relaxed.http(HOST).get('/api/v1/content/contents/summary').set('cookie', writer.cookie);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.total as number;
    };
    const exported = async () => {
      const res = await relaxed.http(HOST).get('/api/v1/content/contents?format=ndjson').set('cookie', writer.cookie);
      expect(res.status, res.text).toBe(200);
      return res.text;
    };
    const before = await summary();
    await pair.pauseReplay();
    try {
      const id = await publishedContent(relaxed, 'summed-paused', 'Lagging');
      // The primary has it: a list (which stays on the primary) shows it.
      const list = await relaxed.http(HOST).get('/api/v1/content/contents?limit=50').set('cookie', writer.cookie);
      expect(list.body.items.map((c: { id: string }) => c.id)).toContain(id);
      expect(await summary()).toBe(before);
      const rows = await exported();
      expect(rows).toContain('Counted');
      expect(rows).not.toContain(id);
    } finally {
      await replicaCurrent();
    }
    expect(await summary()).toBe(before + 1);
  });
});

describe('lists and reads by id', () => {
  it('stay on the primary; with Prefer: replica they read the replica, eventually consistent, and say so', async () => {
    await replicaCurrent();
    await pair.pauseReplay();
    try {
      const fresh = await publishedContent(relaxed, 'fresh', 'Fresh');
      const list = (prefer?: string) => {
        const req = relaxed.http(HOST).get('/api/v1/content/contents?limit=50').set('cookie', writer.cookie);
        return prefer === undefined ? req : req.set('prefer', prefer);
      };
      const ids = (res: { body: { items: { id: string }[] } }) => res.body.items.map((c) => c.id);
      const onPrimary = await list();
      expect(onPrimary.status).toBe(200);
      expect(ids(onPrimary)).toContain(fresh);
      expect(onPrimary.headers['preference-applied']).toBeUndefined();
      const onReplica = await list('replica');
      expect(onReplica.status).toBe(200);
      expect(ids(onReplica)).not.toContain(fresh);
      expect(onReplica.headers['preference-applied']).toBe('replica');
      // Among other preferences, and with parameters, as RFC 7240 writes them.
      const among = await list('respond-async, replica; strict, wait=5');
      expect([ids(among).includes(fresh), among.headers['preference-applied']]).toEqual([false, 'replica']);
      // Another preference alone changes nothing.
      expect(ids(await list('return=minimal'))).toContain(fresh);

      const read = (prefer?: string) => {
        const req = relaxed.http(HOST).get(`/api/v1/content/contents/${fresh}`).set('cookie', writer.cookie);
        return prefer === undefined ? req : req.set('prefer', prefer);
      };
      expect((await read()).status).toBe(200);
      const missing = await read('replica');
      expect([missing.status, missing.body.code, missing.headers['preference-applied']]).toEqual([
        404,
        'NOT_FOUND',
        'replica',
      ]);

      // A caller the replica does not know yet (signed in since its replay paused) is served by the primary.
      const newcomer = await signInAs(relaxed, acme, ['content:read']);
      const theirs = await relaxed
        .http(HOST)
        .get('/api/v1/content/contents?limit=50')
        .set('cookie', newcomer.cookie)
        .set('prefer', 'replica');
      expect(theirs.status, JSON.stringify(theirs.body)).toBe(200);
      expect(ids(theirs)).toContain(fresh);
      expect(theirs.headers['preference-applied']).toBeUndefined();
    } finally {
      await replicaCurrent();
    }
  });
});

describe('without database.replica_url', () => {
  it("every read is the primary's: the public read current, and Prefer: replica not applied", async () => {
    await replicaCurrent();
    await pair.pauseReplay();
    try {
      const fresh = await publishedContent(without, 'unreplicated', 'Unreplicated');
      const list = await without
        .http(HOST)
        .get('/api/v1/content/contents?limit=50')
        .set('cookie', writer.cookie)
        .set('prefer', 'replica');
      expect(list.status).toBe(200);
      expect(list.body.items.map((c: { id: string }) => c.id)).toContain(fresh);
      expect(list.headers['preference-applied']).toBeUndefined();
      expect(await publicTitle(without, 'unreplicated')).toBe('Unreplicated');
    } finally {
      await replicaCurrent();
    }
  });
});

describe('past database.replica_max_lag_ms', () => {
  it('reads go to the primary, and tenantry_db_replica_in_use says so; once the replica catches up, back to it', async () => {
    await replicaCurrent();
    const id = await publishedContent(strict, 'lagging', 'Before');
    await replicaCurrent();
    expect(await publicTitle(strict, 'lagging')).toBe('Before');
    await pair.pauseReplay();
    try {
      await retitle(strict, id, 'After');
      // The replica has not replayed it: it would answer the old title.
      const stale = await replica.query<{ title: string }>(`select title from contents where id = $1`, [id]);
      expect(stale.rows[0]!.title).toBe('Before');
      // Within a check or two of the lag passing 300 ms, reads leave the replica.
      await until('the replica left', async () => (await metric(strict, 'tenantry_db_replica_in_use')) === 0, 5000);
      expect(await metric(strict, 'tenantry_db_replica_lag_seconds')).toBeGreaterThan(0.3);
      const toPrimary = await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'primary' });
      expect(await publicTitle(strict, 'lagging')).toBe('After');
      expect(await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'primary' })).toBe(toPrimary + 1);
      // The relaxed app, a minute's lag allowed, still reads the replica.
      expect(await publicTitle(relaxed, 'lagging')).toBe('Before');
    } finally {
      await replicaCurrent();
    }
    const toReplica = await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'replica' });
    expect(await publicTitle(strict, 'lagging')).toBe('After');
    expect(await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'replica' })).toBe(toReplica + 1);
  });

  it('the lag is checked once a second at most, whatever the requests, and without them', async () => {
    await replicaCurrent();
    const before = await metric(strict, 'tenantry_db_replica_lag_checks_total');
    const reads = await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'replica' });
    const started = Date.now();
    for (let round = 0; round < 5; round++)
      await Promise.all(Array.from({ length: 40 }, () => publicTitle(strict, 'lagging')));
    const elapsed = Date.now() - started;
    const checks = (await metric(strict, 'tenantry_db_replica_lag_checks_total')) - before;
    expect(await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'replica' })).toBe(reads + 200);
    expect(checks).toBeLessThanOrEqual(Math.ceil(elapsed / 1000) + 1);
    // And with no request at all, the checks go on.
    const idle = await metric(strict, 'tenantry_db_replica_lag_checks_total');
    await new Promise((r) => setTimeout(r, 2500));
    expect(await metric(strict, 'tenantry_db_replica_lag_checks_total')).toBeGreaterThanOrEqual(idle + 2);
  });
});

describe('a replica that stops answering', () => {
  it('is left for the primary once a check goes unanswered for a second, and used again once it answers', async () => {
    await replicaCurrent();
    const id = await publishedContent(strict, 'frozen', 'Before');
    await replicaCurrent();
    expect(await publicTitle(strict, 'frozen')).toBe('Before');
    proxy.freeze();
    try {
      // Its connections stay open and silent: a check waits, and is not waited for.
      await until('the replica left', async () => (await metric(strict, 'tenantry_db_replica_in_use')) === 0, 5000);
      await retitle(strict, id, 'After');
      const toPrimary = await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'primary' });
      expect(await publicTitle(strict, 'frozen')).toBe('After');
      expect(await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'primary' })).toBe(toPrimary + 1);
    } finally {
      proxy.thaw();
    }
    await replicaCurrent();
    const toReplica = await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'replica' });
    expect(await publicTitle(strict, 'frozen')).toBe('After');
    expect(await metric(strict, 'tenantry_db_replica_reads_total', { served_by: 'replica' })).toBe(toReplica + 1);
  });
});
