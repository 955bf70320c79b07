import Router, { type HTTPMethod, type HTTPVersion } from 'find-my-way';
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { SessionInfo, TxContext } from '../context/tx.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { ProblemError } from '../errors.ts';
import { STATE_CHANGING_METHODS } from '../access/cross-site.ts';

/**
 * The routes a batch's requests (POST /api/v1/batch, batch.ts) may name, built at boot: a router
 * holding every state-changing route the app registers, with the router's own options, so a path
 * resolves to the route fastify would choose; and, for the routes that can be called directly,
 * their operation (made by http/register-route.ts from the route's guard, schemas and handler).
 * A request whose path resolves to no route, or to a route without a direct operation, is
 * dispatched through the request path instead (`inject`), which answers it as it always has.
 */
export class BatchRoutes {
  private readonly router: Router.Instance<HTTPVersion.V1>;
  private readonly operations = new Map<string, DirectOperation>();
  /** The routes with a step before their transaction (RouteDefinition.beforeTransaction), by key. */
  private readonly steps = new Set<string>();

  constructor(routerOptions: Router.Config<HTTPVersion.V1>) {
    this.router = Router(routerOptions);
  }

  /** A route the app registered (its onRoute hook): every state-changing one joins the router. */
  registered(route: Pick<RouteOptions, 'method' | 'url'>): void {
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      if (!STATE_CHANGING_METHODS.has(method)) continue;
      this.router.on(method as HTTPMethod, route.url, noHandler, keyOf(method, route.url));
    }
  }

  /** The operation of a route a batch's request may call directly. */
  direct(method: string, url: string, operation: DirectOperation): void {
    this.operations.set(keyOf(method, url), operation);
  }

  /** A route with a step before its transaction: the batch prepares its requests before its transaction opens. */
  prepares(method: string, url: string): void {
    this.steps.add(keyOf(method, url));
  }

  /** The direct operation a request names, with its path's parameters; undefined: dispatch it. */
  find(method: string, path: string): { operation: DirectOperation; params: Record<string, string> } | undefined {
    const found = this.route(method, path);
    const operation = found ? this.operations.get(found.store as string) : undefined;
    return operation && found ? { operation, params: found.params as Record<string, string> } : undefined;
  }

  /** Whether the route a request names has a step before its transaction, to run before the batch's opens. */
  hasStep(method: string, path: string): boolean {
    const found = this.route(method, path);
    return found !== null && this.steps.has(found.store as string);
  }

  private route(method: string, path: string): ReturnType<typeof this.router.find> {
    try {
      return this.router.find(method as HTTPMethod, path);
    } catch {
      // A path the router cannot read (bad percent-encoding): the request path refuses it.
      return null;
    }
  }
}

const keyOf = (method: string, url: string) => `${method} ${url}`;
const noHandler = () => {};

/** What is the same for every request of one batch, in its transaction or before it: resolved once, from the batch's own request. */
export interface BatchRequestScope {
  readonly tenant: TenantRef;
  /** The batch's request and reply: a handler reads the caller's address and cookies, and sets its status. */
  readonly request: FastifyRequest;
  readonly reply: FastifyReply;
  /** The headers each request carries from the batch (batch.ts, CARRIED_HEADERS). */
  readonly headers: Readonly<Record<string, string>>;
  /** The bearer token the batch was sent with, if any. */
  readonly bearer: string | undefined;
  /** The cross-site rule's refusal of the batch's headers, if it refuses them. */
  readonly crossSite: ProblemError | undefined;
  /** The batch body's size in bytes: no request's body is larger. */
  readonly bodyBytes: number;
}

/** A batch's scope while it prepares its requests, before its transaction opens. */
export interface BatchPrepareScope extends BatchRequestScope {
  /** The batch's caller, resolved and guarded in a short transaction before anything was prepared. */
  readonly session: SessionInfo | null;
}

/** A batch's scope in its transaction. */
export interface BatchScope extends BatchRequestScope {
  /** The batch's transaction, opened with the batch's caller (its session, its permissions). */
  readonly tx: TxContext;
}

/** One request of a batch, its route found. */
export interface DirectItem {
  readonly params: Record<string, string>;
  /** Its JSON body as sent (undefined: none); the operation works on a copy. */
  readonly body: unknown;
}

/** A request's answer, as the route would have sent it alone: its status, its serialised body, its Location. */
export interface DirectAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly location?: string;
}

/**
 * A route's operation called directly for one request of a batch: the refusals its hooks make
 * before the body is read, its body limit, protected-field checks and schema validation, the
 * guard's verdict on the batch's caller for this route, then its handler in the batch's
 * transaction, its answer serialised with the route's response schema. It throws the problem the
 * route would have answered.
 */
export interface DirectOperation {
  readonly operationId: string;
  /**
   * The route's step before its transaction (RouteDefinition.beforeTransaction), run before the
   * batch's transaction opens after the same checks and validation as run's and the guard's
   * verdict on the batch's caller; absent when the route has none.
   */
  prepare?(scope: BatchPrepareScope, item: DirectItem): Promise<unknown>;
  /** prepared: what prepare returned for this request. */
  run(scope: BatchScope, item: DirectItem, prepared?: unknown): Promise<DirectAnswer>;
}

/** An answer's body as a client reads it: JSON, the text itself if it is not JSON, null if empty. */
export function parseAnswer(body: string): unknown {
  if (body === '') return null;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}
