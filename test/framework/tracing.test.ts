import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { startTestApp, createCustomer, signInAs, type TestApp, type SignedIn } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, type SubscriptionDefinition } from '../../framework/entity/define.ts';
import { startTracing, stopTracing, tracingEnabled, tracingRequested } from '../../framework/observability/tracing.ts';

// The SDK's in-memory exporter takes every span the process ends (sdk-node, as in production,
// with the exporter the environment would name replaced by this one).
const exporter = new InMemorySpanExporter();
const watcher: SubscriptionDefinition = {
  name: 'tracing-watcher',
  event: 'testkit.widget.created',
  handle: async () => {},
};
const probe = defineModule({ name: 'tracingprobe', subscriptions: [watcher] });

const HOST = 'tracing.localhost';
let app: TestApp;
let user: SignedIn;

beforeAll(async () => {
  expect(tracingEnabled()).toBe(false);
  await startTracing({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  app = await startTestApp({ modules: [...allModules, testkitModule, probe], role: 'all', startWorker: true });
  const tenant = await createCustomer(app, 'tracing', HOST);
  user = await signInAs(app, tenant, ['widget:read', 'widget:write']);
});
afterAll(async () => {
  await app?.close();
  await stopTracing();
});

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const traceOf = (span: ReadableSpan) => span.spanContext().traceId;
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('one create, traced from the request to the audit trail and the subscription', () => {
  it('gives spans for the request, its exchange, the relay with the audit, and the delivery, in one trace or linked', async () => {
    exporter.reset();
    const name = `traced-${randomUUID()}`;
    const res = await app
      .http(HOST)
      .post('/api/v1/testkit/widgets')
      .set('Cookie', user.cookie)
      .send({ name, size: 3, color: 'blue' });
    expect(res.status).toBe(201);

    const delivery = await until('the delivery span', () =>
      exporter.getFinishedSpans().find((s) => s.name === 'deliver tracing-watcher'),
    );
    const spans = exporter.getFinishedSpans();
    const request = spans.find(
      (s) =>
        s.name === 'request' &&
        s.attributes['http.route'] === '/api/v1/testkit/widgets' &&
        s.attributes['http.request.method'] === 'POST',
    )!;
    expect(request).toBeDefined();
    const trace = traceOf(request);

    // The exchange: a client span in the request's trace, with the statements' text and none of the values.
    const exchange = spans.find(
      (s) =>
        s.name === 'db.exchange' &&
        traceOf(s) === trace &&
        String(s.attributes['db.query.text']).includes('insert into outbox'),
    )!;
    expect(exchange).toBeDefined();
    expect(exchange.attributes['db.system.name']).toBe('postgresql');
    expect(JSON.stringify(exchange.attributes)).not.toContain(name);
    expect(JSON.stringify(exchange.attributes)).not.toContain('blue');

    // The relay's pass is a trace of its own (it moves many requests' events), linked to the span that wrote each.
    const relay = spans.find((s) => s.name === 'outbox.relay' && s.links.some((l) => l.context.traceId === trace))!;
    expect(relay).toBeDefined();
    expect(relay.links.find((l) => l.context.traceId === trace)!.context.spanId).toBe(
      exchange.parentSpanContext?.spanId,
    );
    const audit = spans.find((s) => s.name === 'outbox.audit' && parentOf(s) === relay.spanContext().spanId);
    expect(audit).toBeDefined();

    // The delivery continues the request's trace, under the span that wrote the event.
    expect(traceOf(delivery)).toBe(trace);
    expect(delivery.attributes).toMatchObject({
      'tenantry.subscription': 'tracing-watcher',
      'tenantry.event.name': 'testkit.widget.created',
    });
    // The delivery's own transaction shows as query spans beneath it.
    expect(spans.some((s) => s.name === 'db.query' && parentOf(s) === delivery.spanContext().spanId)).toBe(true);
  });

  it('a job run is a span, its queries beneath it', async () => {
    exporter.reset();
    const { tallyJob } = await import('../helpers/testkit-module.ts');
    await app.worker!.jobs.runOnce(tallyJob.name);
    const job = exporter.getFinishedSpans().find((s) => s.name === `job ${tallyJob.name}`)!;
    expect(job).toBeDefined();
    expect(job.attributes['tenantry.job']).toBe(tallyJob.name);
    expect(
      exporter.getFinishedSpans().some((s) => s.name === 'db.query' && parentOf(s) === job.spanContext().spanId),
    ).toBe(true);
  });
});

describe('the request span', () => {
  it('records the URL with the values of secret query parameters replaced, as the request log does', async () => {
    exporter.reset();
    const secrets = { token: `reset-${randomUUID()}`, code: `code-${randomUUID()}`, signature: `sig-${randomUUID()}` };
    // A set-password link's token, a sign-in code, an export link's signature: each opens something by itself.
    await app.http(HOST).get(`/auth/reset?token=${secrets.token}`);
    await app.http(HOST).get(`/api/v1/auth/oidc/callback?code=${secrets.code}&state=s&iss=x`);
    await app.http(HOST).get(`/api/v1/tenant/exports/${randomUUID()}/archive?expires=1&signature=${secrets.signature}`);
    const requests = await until('the three request spans', () => {
      const found = exporter.getFinishedSpans().filter((s) => s.name === 'request');
      return found.length >= 3 ? found : undefined;
    });
    const recorded = JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes));
    for (const value of Object.values(secrets)) expect(recorded).not.toContain(value);
    expect(requests.map((s) => s.attributes['url.path'])).toEqual(
      expect.arrayContaining([
        '/auth/reset?token=redacted',
        '/api/v1/auth/oidc/callback?code=redacted&state=redacted&iss=x',
      ]),
    );
  });
});

describe('switched on by the OTEL_* environment only', () => {
  it('reads the standard variables', () => {
    expect(tracingRequested({})).toBe(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: 'tenantry' })).toBe(false);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(
      tracingRequested({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    ).toBe(false);
    expect(tracingRequested({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(
      false,
    );
  });
});
