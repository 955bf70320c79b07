import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import type { FastifyPluginCallback } from 'fastify';
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { loggableUrl } from '../http/log-redaction.ts';

/** The semantic conventions' name of the request span's URL attribute, which @fastify/otel sets. */
const ATTR_URL_PATH = 'url.path';

/**
 * OpenTelemetry traces, off unless the standard OTEL_* environment asks for them
 * (docs/observability.md). Off, nothing here does any work on the request path: every helper
 * checks one flag and calls straight through. On, @opentelemetry/sdk-node is started with the
 * exporter the environment names, @fastify/otel makes the request spans, and the framework adds
 * its own: each database exchange, the relay, each subscription delivery and each job run.
 */

export const TRACER_NAME = 'tenantry';

type SpanProcessors = NonNullable<NodeSDKConfiguration['spanProcessors']>;

interface Tracing {
  shutdown(): Promise<void>;
  plugin: FastifyPluginCallback;
}

let active: Tracing | undefined;

/**
 * Whether the environment asks for traces: an OTLP endpoint, or an explicit OTEL_TRACES_EXPORTER
 * other than none; and not OTEL_SDK_DISABLED. OTEL_SERVICE_NAME alone names the service but does
 * not switch tracing on (it would send to a collector nobody configured).
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || exporter);
}

/** True once startTracing has started the SDK in this process. */
export const tracingEnabled = (): boolean => active !== undefined;

/**
 * Starts the SDK when the environment asks for it (or when span processors are given: the tests'
 * in-memory exporter). Call it before the app is built. Returns whether tracing is on.
 */
export async function startTracing(
  options: { env?: NodeJS.ProcessEnv; spanProcessors?: SpanProcessors } = {},
): Promise<boolean> {
  if (active) return true;
  const env = options.env ?? process.env;
  if (!options.spanProcessors && !tracingRequested(env)) return false;
  const [{ NodeSDK }, { FastifyOtelInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@fastify/otel'),
  ]);
  // Request and handler spans only: a span per lifecycle hook would be most of the spans and tell little.
  // The request span's url.path is the URL as the request log has it: @fastify/otel records it
  // verbatim, query included, and a set-password token or an export link's signature opens
  // something by itself.
  const fastify = new FastifyOtelInstrumentation({
    instrumentHooks: false,
    requestHook: (span, request) => void span.setAttribute(ATTR_URL_PATH, loggableUrl(request.url)),
  });
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: TRACER_NAME }),
    instrumentations: [fastify],
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
  });
  sdk.start();
  active = { shutdown: () => sdk.shutdown(), plugin: fastify.plugin() as FastifyPluginCallback };
  return true;
}

/** Ends tracing: flushes and stops the SDK. */
export async function stopTracing(): Promise<void> {
  const tracing = active;
  active = undefined;
  await tracing?.shutdown();
}

/** The @fastify/otel plugin while tracing is on, to register before every route. */
export const fastifyTracingPlugin = (): FastifyPluginCallback | undefined => active?.plugin;

const tracer = () => trace.getTracer(TRACER_NAME);

export interface SpanOptions {
  attributes?: Attributes;
  links?: Link[];
  /** The parent; the active context when absent. */
  parent?: Context;
  kind?: SpanKind;
}

/** Runs fn in a span (its child spans nest under it), ending it when fn settles. Off: fn alone. */
export function withSpan<T>(
  name: string,
  options: SpanOptions,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!active) return fn(undefined);
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(
    name,
    { attributes: options.attributes, links: options.links, kind: options.kind ?? SpanKind.INTERNAL },
    parent,
  );
  return context.with(trace.setSpan(parent, span), async () => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * A span that is opened now and kept only if `end` is called: for work that learns only once it
 * has started whether it did anything worth a span (a relay pass that claimed nothing does not).
 */
export function startOptionalSpan(
  name: string,
  options: SpanOptions = {},
): { span: Span; context: Context } | undefined {
  if (!active) return undefined;
  const parent = options.parent ?? ROOT_CONTEXT;
  const span = tracer().startSpan(
    name,
    { attributes: options.attributes, links: options.links, kind: options.kind ?? SpanKind.INTERNAL },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** The active span's W3C traceparent, to keep with work done later (an outbox row); null when off. */
export function currentTraceparent(): string | null {
  if (!active) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The context a stored traceparent names, as a parent or a link; undefined when off or absent. */
export function contextOf(traceparent: string | null | undefined): Context | undefined {
  if (!active || !traceparent) return undefined;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

/** A link to the span a stored traceparent names. */
export function linkTo(traceparent: string | null | undefined): Link | undefined {
  const ctx = contextOf(traceparent);
  const spanContext = ctx ? trace.getSpanContext(ctx) : undefined;
  return spanContext ? { context: spanContext } : undefined;
}

/** PostgreSQL statement texts as a span may carry them: placeholders only, never the values. */
export function dbAttributes(texts: readonly string[], names: readonly (string | undefined)[] = []): Attributes {
  const statementNames = names.filter((n): n is string => n !== undefined);
  return {
    'db.system.name': 'postgresql',
    'db.operation.batch.size': texts.length,
    'db.query.text': texts.map((t) => t.trim().replace(/\s+/g, ' ')).join(';\n'),
    ...(statementNames.length > 0 ? { 'tenantry.db.statement_names': statementNames } : {}),
  };
}

/**
 * A kysely `log` function that records each query as a span under the active one (the request's,
 * the job's), with its text and timing: the query's own statement, never its parameters. Only
 * while tracing is on; kysely is given no log function otherwise.
 */
export function kyselyQuerySpans():
  | ((event: {
      level: 'query' | 'error';
      query: { sql: string };
      queryDurationMillis: number;
      error?: unknown;
    }) => void)
  | undefined {
  if (!active) return undefined;
  return (event) => {
    const end = Date.now();
    const span = tracer().startSpan(
      'db.query',
      {
        kind: SpanKind.CLIENT,
        startTime: end - event.queryDurationMillis,
        attributes: dbAttributes([event.query.sql]),
      },
      context.active(),
    );
    if (event.level === 'error')
      span.setStatus({ code: SpanStatusCode.ERROR, message: (event.error as Error | undefined)?.message ?? 'failed' });
    span.end(end);
  };
}

/** One exchange with PostgreSQL (statements sent together, answered together) as a client span. */
export function traceExchange<T>(statements: readonly { text: string }[], fn: () => Promise<T>): Promise<T> {
  if (!active) return fn();
  return withSpan(
    'db.exchange',
    { kind: SpanKind.CLIENT, attributes: dbAttributes(statements.map((s) => s.text)) },
    () => fn(),
  );
}
