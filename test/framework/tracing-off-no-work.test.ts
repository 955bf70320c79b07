import { describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import {
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  trace,
  type Context,
  type ContextManager,
  type Span,
  type TextMapPropagator,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, type SubscriptionDefinition } from '../../framework/entity/define.ts';
import { tracingEnabled } from '../../framework/observability/tracing.ts';

/**
 * Issue 32, point 6: with tracing off (no OTEL_* environment, startTracing never started the SDK),
 * the request path does no tracing work. Every way into OpenTelemetry goes through the API's
 * globals, so this file installs counting ones through the API's documented setters (a tracer
 * provider, a propagator, a context manager) before the app is built: any span started, any trace
 * context read, injected or extracted, and any context entered, anywhere in the process, is
 * counted. A request, the events it writes, their relay and their delivery must leave the count at
 * zero. (This file runs in a process of its own, OWN_PROCESS in test/helpers/test-kinds.ts, so these
 * globals reach no other file.)
 */

const calls: string[] = [];
const nonRecording = (): Span => trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

const countingTracer: Tracer = {
  startSpan(name) {
    calls.push(`tracer.startSpan ${name}`);
    return nonRecording();
  },
  startActiveSpan(name: string, ...rest: unknown[]) {
    calls.push(`tracer.startActiveSpan ${name}`);
    const fn = rest.at(-1) as (span: Span) => unknown;
    return fn(nonRecording());
  },
} as Tracer;

const countingProvider: TracerProvider = {
  getTracer(name) {
    calls.push(`getTracer ${name}`);
    return countingTracer;
  },
};

const countingPropagator: TextMapPropagator = {
  inject() {
    calls.push('propagation.inject');
  },
  extract(ctx: Context) {
    calls.push('propagation.extract');
    return ctx;
  },
  fields: () => [],
};

const countingContextManager: ContextManager = {
  active() {
    calls.push('context.active');
    return ROOT_CONTEXT;
  },
  with(_ctx, fn, thisArg, ...args) {
    calls.push('context.with');
    return fn.call(thisArg, ...args);
  },
  bind(_ctx, target) {
    calls.push('context.bind');
    return target;
  },
  enable() {
    return this;
  },
  disable() {
    return this;
  },
};

// Installed at load, before useTestApp's beforeAll builds the app. Each setter answers false when a
// global of its kind is already registered: then this file would be counting nothing.
const installed = [
  trace.setGlobalTracerProvider(countingProvider),
  propagation.setGlobalPropagator(countingPropagator),
  context.setGlobalContextManager(countingContextManager),
];

const delivered: string[] = [];
const watcher: SubscriptionDefinition = {
  name: 'untraced-watcher',
  event: 'testkit.widget.created',
  handle: async (_ctx, event) => {
    delivered.push(String(event.payload.id));
  },
};
const probe = defineModule({ name: 'untracedprobe', subscriptions: [watcher] });

const t = useTestApp({
  modules: [...allModules, testkitModule, probe],
  role: 'all',
  startWorker: true,
  customers: ['untraced'],
});

describe('tracing off: the request path does no tracing work', () => {
  it('the counters see a span started through the API (they would see the framework start one)', () => {
    expect(installed).toEqual([true, true, true]);
    const before = calls.length;
    trace.getTracer('control').startSpan('control').end();
    expect(calls.slice(before)).toEqual(['getTracer control', 'tracer.startSpan control']);
    calls.length = 0;
  });

  it('a create and a list, the event relayed and delivered: no tracer, propagator or context call, and no trace context in the outbox', async () => {
    expect(tracingEnabled()).toBe(false);
    calls.length = 0;
    const user = await signInAs(t.app, t.untraced, ['widget:read', 'widget:write']);
    const name = `untraced-${randomUUID()}`;
    const created = await t.app
      .http('untraced.localhost')
      .post('/api/v1/testkit/widgets')
      .set('Cookie', user.cookie)
      .send({ name, size: 3, color: 'blue' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const listed = await t.app
      .http('untraced.localhost')
      .get('/api/v1/testkit/widgets?limit=5')
      .set('Cookie', user.cookie);
    expect(listed.status).toBe(200);
    const id = String(created.body.id);
    await vi.waitFor(() => expect(delivered).toContain(id), { timeout: 15_000, interval: 50 });

    const { rows } = await t.app.services.db.pool.query<{ traceparent: string | null }>(
      `select traceparent from outbox where payload->>'id' = $1`,
      [id],
    );
    expect(rows).toEqual([{ traceparent: null }]);
    expect(calls).toEqual([]);
  });
});
