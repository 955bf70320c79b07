import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { startTestApp, createCustomer, signInAs, type TestApp, type SignedIn } from '../helpers/app.ts';
import { testkitModule, tallyJob } from '../helpers/testkit-module.ts';
import { testConfig } from '../helpers/config.ts';
import { freePort } from '../helpers/ports.ts';
import { scrape, sampleValue, type Sample } from '../helpers/metrics.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, type SubscriptionDefinition } from '../../framework/entity/define.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { THROTTLE } from '../../modules/auth/throttle.ts';

// A subscription that takes every widget and one that refuses every widget (no retry: the first
// failure is a dead letter), so a create moves the delivery series.
const seen: SubscriptionDefinition = {
  name: 'metricprobe-seen',
  event: 'testkit.widget.created',
  handle: async () => {},
};
const refuses: SubscriptionDefinition = {
  name: 'metricprobe-refuses',
  event: 'testkit.widget.created',
  retryLimit: 0,
  retryDelay: 0,
  handle: async () => {
    throw new Error('metricprobe refuses every widget');
  },
};
const metricProbe = defineModule({ name: 'metricprobe', subscriptions: [seen, refuses] });

const HOST = 'metrics-acme.localhost';
let app: TestApp;
let tenant: TenantRef;
let user: SignedIn;

beforeAll(async () => {
  const port = await freePort();
  app = await startTestApp({
    modules: [...allModules, testkitModule, metricProbe],
    role: 'all',
    startWorker: true,
    config: testConfig({ metrics: { port } }),
  });
  tenant = await createCustomer(app, 'metrics-acme', HOST);
  user = await signInAs(app, tenant, ['widget:read', 'widget:write']);
});
afterAll(async () => {
  await app?.close();
});

const metrics = async (): Promise<Sample[]> => (await scrape(app.metricsUrl!)).samples;

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const createWidget = () =>
  app
    .http(HOST)
    .post('/api/v1/testkit/widgets')
    .set('Cookie', user.cookie)
    .send({ name: `w-${randomUUID().slice(0, 8)}`, size: 1, color: 'red' });

describe('the metrics listener', () => {
  it('answers GET /metrics on its own port, with the default process collectors named tenantry_*', async () => {
    expect(app.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const { text, samples } = await scrape(app.metricsUrl!);
    expect(text).toContain('# TYPE tenantry_http_request_duration_seconds histogram');
    expect(sampleValue(samples, 'tenantry_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(sampleValue(samples, 'tenantry_nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    const other = await fetch(`${app.metricsUrl}/`);
    expect(other.status).toBe(404);
  });

  it('is not served on the main port, at a tenant host or at none', async () => {
    const atTenant = await app.http(HOST).get('/metrics');
    expect(atTenant.status).toBe(404);
    expect(atTenant.body.code).toBe('ROUTE_NOT_FOUND');
    expect(atTenant.text).not.toContain('tenantry_http_request_duration_seconds');
    const atNoHost = await app.http('nosuch.localhost').get('/metrics');
    expect(atNoHost.status).toBe(404);
    expect(atNoHost.text).not.toContain('tenantry_');
  });
});

describe('HTTP series', () => {
  it('a create adds one observation to its operation, method and status class; in flight goes back to 0', async () => {
    const labels = { operation: 'testkit-widget-create', method: 'POST', status_class: '2xx' };
    const before = sampleValue(await metrics(), 'tenantry_http_request_duration_seconds_count', labels) ?? 0;
    const res = await createWidget();
    expect(res.status).toBe(201);
    const after = await metrics();
    expect(sampleValue(after, 'tenantry_http_request_duration_seconds_count', labels)).toBe(before + 1);
    expect(sampleValue(after, 'tenantry_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(
      before + 1,
    );
    expect(sampleValue(after, 'tenantry_http_request_duration_seconds_sum', labels)).toBeGreaterThan(0);
    expect(sampleValue(after, 'tenantry_http_requests_in_flight')).toBe(0);
  });

  it('a refusal counts under its own status class, an unknown path under "unrouted"', async () => {
    const refused = { operation: 'testkit-widget-create', method: 'POST', status_class: '4xx' };
    const unrouted = { operation: 'unrouted', method: 'GET', status_class: '4xx' };
    const before = await metrics();
    expect((await app.http(HOST).post('/api/v1/testkit/widgets').send({})).status).toBe(401);
    expect((await app.http(HOST).get(`/no/such/${randomUUID()}`)).status).toBe(404);
    const after = await metrics();
    expect(sampleValue(after, 'tenantry_http_request_duration_seconds_count', refused)).toBe(
      (sampleValue(before, 'tenantry_http_request_duration_seconds_count', refused) ?? 0) + 1,
    );
    expect(sampleValue(after, 'tenantry_http_request_duration_seconds_count', unrouted)).toBe(
      (sampleValue(before, 'tenantry_http_request_duration_seconds_count', unrouted) ?? 0) + 1,
    );
  });

  it("a public read's 304, answered by the front door before fastify, counts under its operation", async () => {
    const { cookie } = await signInAs(app, tenant, ['article:read', 'article:write']);
    const created = await app
      .http(HOST)
      .post('/api/v1/testkit/articles')
      .set('Cookie', cookie)
      .send({ slug: 'counted-page', title: 'Counted', body: 'Body' });
    expect(
      (await app.http(HOST).post(`/api/v1/testkit/articles/${created.body.id}/publish`).set('Cookie', cookie).send({}))
        .status,
    ).toBe(200);
    const etag = (await app.http(HOST).get('/api/v1/testkit/public/counted-page')).headers.etag!;
    const count = (samples: Sample[]) =>
      new Map(
        samples
          .filter((s) => s.name === 'tenantry_http_request_duration_seconds_count' && s.labels.status_class === '3xx')
          .map((s) => [s.labels.operation!, s.value]),
      );
    const before = count(await metrics());
    expect((await app.http(HOST).get('/api/v1/testkit/public/counted-page').set('If-None-Match', etag)).status).toBe(
      304,
    );
    const after = count(await metrics());
    const moved = [...after].filter(([operation, n]) => n !== (before.get(operation) ?? 0));
    expect(moved).toEqual([[expect.stringMatching(/^testkit-article-/), (before.get(moved[0]?.[0] ?? '') ?? 0) + 1]]);
  });

  it('admin pages count under their page kind, not their path', async () => {
    const widget = await createWidget();
    const page = await app.http(HOST).get(`/admin/testkit/widgets/${widget.body.id}`).set('Cookie', user.cookie);
    expect(page.status).toBe(200);
    const samples = await metrics();
    const kinds = samples.filter(
      (s) =>
        s.name === 'tenantry_http_request_duration_seconds_count' &&
        s.labels.operation!.startsWith('admin-page-get-testkit-widgets'),
    );
    expect(kinds.map((s) => s.labels.operation)).toContain('admin-page-get-testkit-widgets-id');
    expect(JSON.stringify(samples)).not.toContain(widget.body.id);
  });
});

describe('label values under hostile traffic', () => {
  it('a flood of distinct unknown paths, hosts, methods and ids adds no series: every label value is declared', async () => {
    const series = (samples: Sample[]) =>
      new Set(
        samples.filter((s) => s.name.startsWith('tenantry_http_')).map((s) => `${s.name}${JSON.stringify(s.labels)}`),
      );
    const flood = async (round: string) => {
      const requests = [];
      for (let i = 0; i < 20; i++) {
        const tag = `${round}-${i}-${randomUUID()}`;
        requests.push(
          app.http(HOST).get(`/no/such/${tag}`),
          app.http(HOST).get(`/api/v1/${tag}`),
          app.http(HOST).get(`/api/v1/testkit/widgets/${tag}`),
          app.http(HOST).delete(`/api/v1/auth/${tag}`),
          app.http(HOST).patch('/api/v1/auth/me'),
          app.http(HOST).get(`/admin/${tag}`),
          app.http(HOST).get(`/admin/testkit/widgets/${tag}`),
          app.http(HOST).get(`/api/v1/testkit/public/${tag}`),
          app.http(`${tag}.localhost`).get(`/api/v1/testkit/widgets?tenant=${tag}`),
        );
      }
      await Promise.all(requests);
    };
    // The first round meets every label value these requests can have; the second, all new paths,
    // hosts and ids, must meet none.
    await flood('first');
    const before = series(await metrics());
    await flood('second');
    const after = series(await metrics());
    expect([...after].filter((s) => !before.has(s))).toEqual([]);
    expect([...after].join('\n')).not.toMatch(/first-|second-/);
  });
});

describe('sign-in series', () => {
  it('a failed login counts, and a throttled one counts as a 429 of its operation', async () => {
    const source = `203.0.113.${Math.floor(Math.random() * 200) + 1}`;
    const login = () =>
      app
        .http(HOST)
        .post('/api/v1/auth/login')
        .set('X-Forwarded-For', source)
        .send({ email: 'nobody@example.test', password: 'wrong password' });
    const before = await metrics();
    const failed = sampleValue(before, 'tenantry_auth_failed_logins_total') ?? 0;
    const limited = sampleValue(before, 'tenantry_http_rate_limited_total', { operation: 'auth-session-login' }) ?? 0;
    expect((await login()).status).toBe(401);
    expect(sampleValue(await metrics(), 'tenantry_auth_failed_logins_total')).toBe(failed + 1);
    for (let i = 1; i < THROTTLE.login.max; i++) expect((await login()).status).toBe(401);
    expect((await login()).status).toBe(429);
    const after = await metrics();
    expect(sampleValue(after, 'tenantry_auth_failed_logins_total')).toBe(failed + THROTTLE.login.max);
    expect(sampleValue(after, 'tenantry_http_rate_limited_total', { operation: 'auth-session-login' })).toBe(
      limited + 1,
    );
    expect(
      sampleValue(after, 'tenantry_http_request_duration_seconds_count', {
        operation: 'auth-session-login',
        method: 'POST',
        status_class: '4xx',
      }),
    ).toBeGreaterThanOrEqual(THROTTLE.login.max + 1);
  });
});

describe('database series', () => {
  it('reports the pool and the time checkouts waited', async () => {
    await createWidget();
    const samples = await metrics();
    const total = sampleValue(samples, 'tenantry_db_pool_connections')!;
    expect(total).toBeGreaterThan(0);
    expect(total).toBeLessThanOrEqual(app.config.database.pool_size);
    expect(sampleValue(samples, 'tenantry_db_pool_idle_connections')).toBeLessThanOrEqual(total);
    expect(sampleValue(samples, 'tenantry_db_pool_waiting_requests')).toBe(0);
    expect(sampleValue(samples, 'tenantry_db_pool_acquire_wait_seconds_count')).toBeGreaterThan(0);
  });

  it('counts a waiting checkout while every connection is taken, and the scrape does not wait for the pool', async () => {
    const held = await Promise.all(
      Array.from({ length: app.config.database.pool_size }, () => app.services.db.pool.connect()),
    );
    try {
      const waiting = app.services.db.pool.connect().then(
        (client) => client.release(),
        () => {},
      );
      const started = performance.now();
      const samples = await metrics();
      expect(performance.now() - started).toBeLessThan(app.config.database.acquire_timeout_ms);
      expect(sampleValue(samples, 'tenantry_db_pool_waiting_requests')).toBeGreaterThanOrEqual(1);
      expect(sampleValue(samples, 'tenantry_db_pool_idle_connections')).toBe(0);
      held.pop()!.release();
      await waiting;
    } finally {
      for (const client of held) client.release();
    }
  });
});

describe('outbox, queue and tenant series', () => {
  it('a created widget is relayed (lag observed), delivered, refused and dead-lettered by subscription', async () => {
    const before = await metrics();
    const lagCount = sampleValue(before, 'tenantry_outbox_relay_lag_seconds_count') ?? 0;
    const failures =
      sampleValue(before, 'tenantry_outbox_delivery_failures_total', { subscription: 'metricprobe-refuses' }) ?? 0;
    const seenFailures = sampleValue(before, 'tenantry_outbox_delivery_failures_total', {
      subscription: 'metricprobe-seen',
    });
    const dead =
      sampleValue(before, 'tenantry_outbox_dead_letters_total', { subscription: 'metricprobe-refuses' }) ?? 0;
    expect(sampleValue(before, 'tenantry_outbox_unrelayed_events')).toBeGreaterThanOrEqual(0);
    const created = await createWidget();
    expect(created.status).toBe(201);
    // This widget's own dead letter, then the series (earlier widgets' deliveries may still be under way).
    await until('the dead letter of this widget', async () => {
      const { rows } = await app.services.db.pool.query(
        `select 1 from dead_letters d join outbox o on o.event_id = d.event_id where o.payload->>'id' = $1 and d.queue = 'sub-metricprobe-refuses'`,
        [created.body.id],
      );
      return rows.length > 0;
    });
    const after = await until('the dead-letter count', async () => {
      const s = await metrics();
      return (sampleValue(s, 'tenantry_outbox_dead_letters_total', { subscription: 'metricprobe-refuses' }) ?? 0) > dead
        ? s
        : undefined;
    });
    expect(sampleValue(after, 'tenantry_outbox_relay_lag_seconds_count')).toBeGreaterThan(lagCount);
    expect(sampleValue(after, 'tenantry_outbox_relay_lag_seconds_sum')).toBeGreaterThan(0);
    expect(
      sampleValue(after, 'tenantry_outbox_delivery_failures_total', { subscription: 'metricprobe-refuses' }),
    ).toBeGreaterThanOrEqual(failures + 1);
    expect(sampleValue(after, 'tenantry_outbox_delivery_failures_total', { subscription: 'metricprobe-seen' })).toBe(
      seenFailures,
    );
    expect(sampleValue(after, 'tenantry_outbox_unrelayed_events')).toBe(0);
  });

  it('reports the depth and failed jobs of every pg-boss queue, and the tenants by status', async () => {
    const samples = await metrics();
    const queues = samples.filter((s) => s.name === 'tenantry_queue_depth').map((s) => s.labels.queue);
    expect(queues).toEqual(
      expect.arrayContaining([
        'sub-metricprobe-seen',
        'sub-metricprobe-refuses',
        'job-testkit-tally',
        'tenantry-dead-letters',
      ]),
    );
    expect(sampleValue(samples, 'tenantry_queue_depth', { queue: 'sub-metricprobe-seen' })).toBeGreaterThanOrEqual(0);
    expect(sampleValue(samples, 'tenantry_queue_failed_jobs', { queue: 'sub-metricprobe-seen' })).toBe(0);
    const { rows } = await app.services.db.pool.query<{ n: number }>(
      `select count(*)::int as n from tenants where status = 'active'`,
    );
    expect(sampleValue(samples, 'tenantry_tenants', { status: 'active' })).toBe(rows[0]!.n);
    expect(sampleValue(samples, 'tenantry_tenants', { status: 'suspended' })).toBeGreaterThanOrEqual(0);
  });
});

describe('job series', () => {
  it('a job run sets its last success time and duration; a failed one counts and leaves the success time', async () => {
    const startedAt = Date.now() / 1000;
    const outcomes = await app.worker!.jobs.runOnce(tallyJob.name, { tenant });
    expect(outcomes.every((o) => o.ok)).toBe(true);
    const samples = await metrics();
    const success = sampleValue(samples, 'tenantry_job_last_success_timestamp_seconds', { job: 'testkit-tally' })!;
    expect(success).toBeGreaterThanOrEqual(Math.floor(startedAt));
    expect(success).toBeLessThanOrEqual(Date.now() / 1000 + 1);
    expect(sampleValue(samples, 'tenantry_job_last_duration_seconds', { job: 'testkit-tally' })).toBeGreaterThan(0);

    const { tallyControl } = await import('../helpers/testkit-module.ts');
    tallyControl.failFor.add(tenant.id);
    try {
      const failures = sampleValue(samples, 'tenantry_job_failures_total', { job: 'testkit-tally' }) ?? 0;
      expect((await app.worker!.jobs.runOnce(tallyJob.name, { tenant }))[0]!.ok).toBe(false);
      const after = await metrics();
      expect(sampleValue(after, 'tenantry_job_failures_total', { job: 'testkit-tally' })).toBe(failures + 1);
      expect(sampleValue(after, 'tenantry_job_last_success_timestamp_seconds', { job: 'testkit-tally' })).toBe(success);
    } finally {
      tallyControl.failFor.delete(tenant.id);
    }
  });
});

describe('bounded labels', () => {
  it('no series has a tenant, user or host label, and no label value names one', async () => {
    await createWidget();
    const { text, samples } = await scrape(app.metricsUrl!);
    const labelNames = new Set(samples.flatMap((s) => Object.keys(s.labels)));
    for (const name of labelNames) expect(name).not.toMatch(/tenant|user|host|actor|email|session/i);
    for (const value of [tenant.id, tenant.slug, HOST, user.userId, user.email, app.operator.id])
      expect(text).not.toContain(value);
    const allowed = new Set([
      'operation',
      'method',
      'status_class',
      'le',
      'subscription',
      'queue',
      'job',
      'status',
      'quantile',
      'type',
      'version',
      'major',
      'minor',
      'patch',
      'space',
      'kind',
    ]);
    expect([...labelNames].filter((n) => !allowed.has(n))).toEqual([]);
  });
});

describe('metrics.port off', () => {
  it('0 or empty: no listener and nothing counted', async () => {
    for (const port of [0, ''] as const) {
      const off = await startTestApp({ databaseUrl: app.databaseUrl, config: testConfig({ metrics: { port } }) });
      try {
        expect(off.metricsUrl).toBeUndefined();
        expect(off.services.metrics).toBeUndefined();
      } finally {
        await off.close();
      }
    }
    expect(testConfig({}, { TENANTRY_METRICS_PORT: '' }).metrics.port).toBe('');
    expect(testConfig({}, { TENANTRY_METRICS_PORT: '9464' }).metrics.port).toBe(9464);
    expect(() => testConfig({}, { TENANTRY_METRICS_PORT: 'nine' })).toThrow(/metrics\.port/);
  });
});
