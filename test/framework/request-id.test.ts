import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { IncomingMessage } from 'node:http';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { startTestApp, createCustomer, signInAs, type TestApp, type SignedIn } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, type DeliveredEvent, type SubscriptionDefinition } from '../../framework/entity/define.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { requestIdGenerator, trustedPeer } from '../../framework/observability/request-id.ts';
import { tracingEnabled } from '../../framework/observability/tracing.ts';

const delivered: DeliveredEvent[] = [];
const watcher: SubscriptionDefinition = {
  name: 'requestid-watcher',
  event: 'testkit.widget.created',
  handle: async (_ctx, event) => void delivered.push(event),
};
const probe = defineModule({ name: 'requestidprobe', subscriptions: [watcher] });

const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    for (const line of String(chunk).split('\n'))
      if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

const HOST = 'reqid.localhost';
let app: TestApp;
let tenant: TenantRef;
let user: SignedIn;

beforeAll(async () => {
  app = await startTestApp({
    modules: [...allModules, testkitModule, probe],
    role: 'all',
    startWorker: true,
    logger: pino({ level: 'info' }, sink) as FastifyBaseLogger,
  });
  tenant = await createCustomer(app, 'reqid', HOST);
  user = await signInAs(app, tenant, ['widget:read', 'widget:write']);
});
afterAll(async () => {
  await app?.close();
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("X-Request-Id from a trusted proxy, through the request, its event and the event's delivery", () => {
  it('is echoed, in every log line of the request, on the outbox row and the audit row, and in the delivery log', async () => {
    const requestId = `proxy-${randomUUID()}`;
    // supertest connects from 127.0.0.1: a trusted proxy under the default server.trust_proxy (loopback).
    const res = await app
      .http(HOST)
      .post('/api/v1/testkit/widgets')
      .set('Cookie', user.cookie)
      .set('X-Request-Id', requestId)
      .send({ name: `w-${requestId}`, size: 1, color: 'red' });
    expect(res.status).toBe(201);
    expect(res.headers['x-request-id']).toBe(requestId);

    const ofRequest = lines.filter((l) => l.requestId === requestId);
    expect(ofRequest.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
    // Every line of a request names one: fastify's own and the route's.
    expect(
      lines
        .filter((l) => l.msg === 'incoming request' || l.msg === 'request completed')
        .every((l) => typeof l.requestId === 'string'),
    ).toBe(true);

    const { rows } = await app.services.db.pool.query<{ event_id: string; request_id: string }>(
      `select event_id, request_id, traceparent from outbox where payload->>'id' = $1`,
      [res.body.id],
    );
    // Tracing is off here (no OTEL_* environment): no SDK, and no trace context written with the event.
    expect(tracingEnabled()).toBe(false);
    expect(rows).toEqual([{ event_id: expect.any(String), request_id: requestId, traceparent: null }]);
    const eventId = rows[0]!.event_id;

    const line = await until('the delivery log line', async () =>
      lines.find((l) => l.msg === 'event delivered' && l.eventId === eventId),
    );
    expect(line).toMatchObject({
      subscription: 'requestid-watcher',
      event: 'testkit.widget.created',
      eventId,
      requestId,
    });
    expect(delivered.find((e) => e.id === eventId)?.requestId).toBe(requestId);

    const audit = await app.services.transactions.run(
      tenant,
      async (tx) =>
        await tx.db
          .selectFrom('audit_events')
          .select(['event_id', 'request_id'])
          .where('event_id', '=', eventId)
          .execute(),
    );
    expect(audit).toEqual([{ event_id: eventId, request_id: requestId }]);
  });

  it('is in the problem document of a refused request', async () => {
    const requestId = `proxy-${randomUUID()}`;
    const res = await app
      .http(HOST)
      .post('/api/v1/testkit/widgets')
      .set('Cookie', user.cookie)
      .set('X-Request-Id', requestId)
      .send({ name: '' });
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['x-request-id']).toBe(requestId);
    expect(res.body.requestId).toBe(requestId);
    const notFound = await app
      .http('nosuch-reqid.localhost')
      .get('/api/v1/testkit/widgets')
      .set('X-Request-Id', requestId);
    expect(notFound.body).toMatchObject({ code: 'NO_SITE', requestId });
  });

  it('is made when none is sent: a UUID, echoed and in the problem document', async () => {
    const res = await app.http(HOST).get(`/api/v1/testkit/widgets/${randomUUID()}`).set('Cookie', user.cookie);
    expect(res.status).toBe(404);
    expect(res.headers['x-request-id']).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(res.body.requestId).toBe(res.headers['x-request-id']);
    const again = await app.http(HOST).get(`/api/v1/testkit/widgets/${randomUUID()}`).set('Cookie', user.cookie);
    expect(again.headers['x-request-id']).not.toBe(res.headers['x-request-id']);
  });

  it('events published without a request (a job, a tool) record none', async () => {
    const marker = randomUUID();
    await app.services.transactions.run(tenant, async (ctx) => ctx.publish('testkit.widget.approved', { id: marker }));
    const { rows } = await app.services.db.pool.query(`select request_id from outbox where payload->>'id' = $1`, [
      marker,
    ]);
    expect(rows).toEqual([{ request_id: null }]);
  });
});

describe("the request's log lines", () => {
  it('name the URL with the values of secret query parameters replaced: an export link, a set-password link', async () => {
    const signature = `sig-${randomUUID()}`;
    const token = `reset-${randomUUID()}`;
    const archive = `/api/v1/tenant/exports/${randomUUID()}/archive`;
    const first = lines.length;
    expect((await app.http(HOST).get(`${archive}?expires=4102444800&signature=${signature}`)).status).toBe(404);
    expect((await app.http(HOST).get(`/auth/reset?token=${token}`)).status).toBe(200);
    const logged = lines.slice(first);
    const urls = logged.map((line) => (line.req as { url?: string } | undefined)?.url).filter(Boolean);
    expect(urls).toEqual(
      expect.arrayContaining([`${archive}?expires=4102444800&signature=redacted`, '/auth/reset?token=redacted']),
    );
    const text = JSON.stringify(logged);
    expect(text).not.toContain(signature);
    expect(text).not.toContain(token);
  });
});

describe('who may name the request id', () => {
  const request = (remoteAddress: string, id?: string) =>
    ({
      headers: id === undefined ? {} : { 'x-request-id': id },
      socket: { remoteAddress },
    }) as unknown as IncomingMessage;

  it('a peer server.trust_proxy trusts, with an id that is a plain token', () => {
    const loopback = requestIdGenerator('loopback');
    expect(loopback(request('127.0.0.1', 'abc-123'))).toBe('abc-123');
    expect(loopback(request('::ffff:127.0.0.1', 'Root=1-67891233-abcdef'))).toBe('Root=1-67891233-abcdef');
    expect(loopback(request('::1', 'abc'))).toBe('abc');
    const list = requestIdGenerator('10.0.0.0/8, 192.0.2.7');
    expect(list(request('10.1.2.3', 'from-lb'))).toBe('from-lb');
    expect(list(request('192.0.2.7', 'from-lb'))).toBe('from-lb');
  });

  it('anyone else, or an id that is not a plain token, gets a new UUID', () => {
    const uuid = /^[0-9a-f-]{36}$/;
    expect(requestIdGenerator('loopback')(request('198.51.100.4', 'chosen'))).toMatch(uuid);
    expect(requestIdGenerator('false')(request('127.0.0.1', 'chosen'))).toMatch(uuid);
    expect(requestIdGenerator('10.0.0.0/8')(request('11.0.0.1', 'chosen'))).toMatch(uuid);
    for (const bad of ['', 'has space', 'new\nline', 'x'.repeat(129), '<script>'])
      expect(requestIdGenerator('true')(request('198.51.100.4', bad))).toMatch(uuid);
    expect(requestIdGenerator('true')(request('198.51.100.4', 'any-peer'))).toBe('any-peer');
    expect(trustedPeer('uniquelocal')('192.168.1.10')).toBe(true);
    expect(trustedPeer('uniquelocal')('8.8.8.8')).toBe(false);
  });
});
