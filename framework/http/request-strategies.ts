import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AnyRoute, NoTxRouteDefinition, OneExchange, RouteDefinition } from '../entity/define.ts';
import type { PublishAllowList, SessionInfo, TxContext, TxOptions } from '../context/tx.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { Services } from '../services.ts';
import type { BearerAttemptLimit } from '../access/bearer.ts';
import type { RouteGuard } from '../access/guard.ts';
import { bearerTokenOf } from '../access/bearer.ts';
import { hashSecret } from '../access/session-cookie.ts';
import { renewSessionCookie } from '../access/sessions.ts';
import { problem } from '../errors.ts';
import { holdsPermission } from '../access/guard.ts';
import { earlierAnswer, idempotencyKeyOf, runIdempotent } from './idempotency.ts';
import { batchMemberOf, memberContext, notBatchable, type BatchMember } from '../bulk/batch-member.ts';
import type { Transactions } from '../contracts/transaction.ts';

/**
 * How a route's request is served once its hooks have passed it, in one of three strategies
 * chosen when the route is registered (strategyFor):
 *
 * - no transaction (`transaction: 'none'`): the caller is resolved and guarded in a short
 *   transaction of its own, then the handler opens the transactions it needs;
 * - one transaction: the opening statement resolves the caller, the guard decides, the handler
 *   runs and commits, in one tenant transaction;
 * - one exchange (a route with `oneExchange` guarded by a permission): the opening statement, its
 *   SQL guard and the route's one statement leave together; the guard decides from the opening
 *   statement's answer before the statement's is used.
 *
 * All three ask the route's guard (access/guard.ts) and nothing else whether the caller may pass.
 * At run time each checks only what varies from one request to the next: a bearer token, an
 * Idempotency-Key (both send a one-exchange request through its transaction instead), and, in the
 * route's statement builder, what its parameters allow (a search `q`, an id that is no UUID).
 */

/** What a route's strategy knows of it, fixed at registration. */
export interface RoutePlan {
  readonly services: Services;
  readonly guard: RouteGuard;
  /** The session cookie's name. */
  readonly cookieName: string;
  /** What the route's transactions may publish (its list, an entity's lifecycle and hook events). */
  readonly publishes: PublishAllowList;
  /** A bearer token authenticates the route (it has a caller and does not take the cookie only). */
  readonly acceptsBearer: boolean;
  /** The route reads an Idempotency-Key (an idempotent route guarded by a permission). */
  readonly idempotent: boolean;
  /** How failed bearer attempts are limited and counted, when a module provides it. */
  readonly attemptLimit: BearerAttemptLimit | undefined;
  /**
   * What runs the request's transactions: the primary's, or for a route that may read from the
   * replica, the replica's when the request and the lag allow (replica-choice.ts).
   */
  readonly transactions: (request: FastifyRequest, reply: FastifyReply) => Transactions;
}

/** Serves one request: the route's strategy. */
export type RequestStrategy = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/**
 * The route's strategy, from its declarations alone; and, for a request that is one of a batch's
 * (framework/bulk/batch-member.ts), the batch's transaction instead.
 */
export function strategyFor(plan: RoutePlan, route: AnyRoute): RequestStrategy {
  const alone = strategyAlone(plan, route);
  const inBatch = batchStrategy(plan, route);
  return (request, reply) => {
    const member = batchMemberOf(request.headers);
    return member ? inBatch(member, request, reply) : alone(request, reply);
  };
}

function strategyAlone(plan: RoutePlan, route: AnyRoute): RequestStrategy {
  if (route.transaction === 'none') return noTransaction(plan, route);
  if (route.beforeTransaction) return preparedTransaction(plan, route, route.beforeTransaction);
  // A route gated by a feature takes its transaction: the feature is judged from the opening
  // statement's answer before the handler writes anything (the one exchange's SQL guard knows permissions only).
  if (route.oneExchange && plan.guard.permission !== undefined && plan.guard.feature === undefined)
    return oneExchange(plan, route, plan.guard.permission);
  return oneTransaction(plan, route);
}

/**
 * One request of a batch: the caller is the batch's, already resolved by the batch's opening
 * statement, and the guard judges it as if the request came alone (a route that takes the session
 * cookie only sees no caller in a batch a bearer token authenticated); then the route's handler
 * runs in the batch's transaction, its publish held to the route's own list. A route that opens
 * its own transactions (transaction: 'none') is refused: it cannot join the batch's one.
 */
function batchStrategy(
  plan: RoutePlan,
  route: AnyRoute,
): (member: BatchMember, request: FastifyRequest, reply: FastifyReply) => Promise<unknown> {
  if (route.transaction === 'none') {
    const refusal = `${route.method} ${route.url}`;
    return async () => {
      throw notBatchable(refusal);
    };
  }
  const run = inBatch(plan, route);
  const prepare = preparedInBatch(plan, route);
  return async (member, request, reply) => {
    member.served = { operationId: route.operationId };
    if (member.phase === 'prepare') {
      member.prepared = await prepare(member.session, contextOf(plan, request, reply));
      // Nothing to answer yet: the batch reads what was prepared from the member.
      reply.code(204);
      return null;
    }
    return run(member.tx, contextOf(plan, request, reply), member.prepared);
  };
}

/** A request's caller as the route sees it in a batch: none on a cookie-only route the batch's bearer token authenticated. */
const callerInBatch = (plan: RoutePlan, session: SessionInfo | null): SessionInfo | null =>
  session && (plan.acceptsBearer || session.via !== 'token') ? session : null;

/**
 * The route's step before its transaction (RouteDefinition.beforeTransaction) for one request of a
 * batch, run before the batch's transaction opens: the guard judges the batch's caller for this
 * route first, as inBatch does, so a request the caller may not make prepares nothing. Undefined
 * for a route without the step.
 */
export function preparedInBatch(
  plan: RoutePlan,
  route: RouteDefinition,
): (session: SessionInfo | null, base: HandlerBase) => Promise<unknown> {
  const step = route.beforeTransaction;
  if (!step) return async () => undefined;
  return async (session, base) => {
    const caller = callerInBatch(plan, session);
    plan.guard.admitCaller(caller);
    return step({ ...base, session: caller });
  };
}

/**
 * The route's handler as one request of a batch, in the batch's transaction: what both ways of
 * reaching it share, the request dispatched through the route's request path (batchStrategy) and
 * the operation called directly (framework/bulk/batch-routes.ts). The guard is the one entry point
 * of authorization: it judges the batch's caller for this route, as if the request came alone.
 */
export function inBatch(
  plan: RoutePlan,
  route: RouteDefinition,
): (batchTx: TxContext, base: HandlerBase, prepared?: unknown) => Promise<unknown> {
  return async (batchTx, base, prepared) => {
    const caller = callerInBatch(plan, batchTx.session);
    plan.guard.admitCaller(caller);
    const tx = memberContext(batchTx, plan.publishes, plan.guard.resolvesCaller && caller !== null);
    return route.handler({ ...base, tx, prepared });
  };
}

/** The bearer token a request authenticates with, on a route that accepts one. */
export const bearerOf = (plan: RoutePlan, request: FastifyRequest): string | undefined =>
  plan.acceptsBearer ? bearerTokenOf(request) : undefined;

const noTenant = (): never => {
  throw problem('NO_SITE');
};

type Context = Parameters<RouteDefinition['handler']>[0];
/** What a transaction route's handler is given besides its transaction (and what was prepared before it). */
export type HandlerBase = Omit<Context, 'tx' | 'prepared'>;
type Base = HandlerBase;

function contextOf(plan: RoutePlan, request: FastifyRequest, reply: FastifyReply): Base {
  return {
    params: request.params as never,
    query: request.query as never,
    body: request.body as never,
    request,
    reply,
    services: plan.services,
  };
}

/**
 * The caller's credential: with a bearer token the request is the token's (its cookie, if any, is
 * not read); else the session cookie on a route that has a caller.
 */
function sessionIdOf(plan: RoutePlan, request: FastifyRequest, bearer: string | undefined): string | undefined {
  return plan.guard.resolvesCaller && bearer === undefined ? request.cookies[plan.cookieName] : undefined;
}

function txOptionsOf(plan: RoutePlan, bearer: string | undefined, rawId: string | undefined): TxOptions {
  return bearer !== undefined
    ? { tokenHash: hashSecret(bearer), publishes: plan.publishes }
    : rawId
      ? { sessionHash: hashSecret(rawId), publishes: plan.publishes }
      : { publishes: plan.publishes };
}

/** What every strategy reads off a request before it opens anything. */
interface Arrival {
  tenant: TenantRef;
  base: Base;
  /** The bearer token, when the request carries one (its cookie is then not read). */
  bearer: string | undefined;
  /** The session cookie's value, on a route that has a caller and a request with no bearer. */
  rawId: string | undefined;
  /** The Idempotency-Key, on a route that honours one. */
  key: string | undefined;
  transactions: Transactions;
}

function arrivalOf(plan: RoutePlan, request: FastifyRequest, reply: FastifyReply): Arrival {
  const tenant = request.tenant ?? noTenant();
  const bearer = bearerOf(plan, request);
  return {
    tenant,
    base: contextOf(plan, request, reply),
    bearer,
    rawId: sessionIdOf(plan, request, bearer),
    key: plan.idempotent ? idempotencyKeyOf(request) : undefined,
    transactions: plan.transactions(request, reply),
  };
}

/**
 * A bearer request's transaction first applies the attempt limit, then refuses a token that did
 * not resolve (unknown, expired, revoked, another tenant's, its user inactive), counting the
 * failure once the transaction has rolled back.
 */
async function admitBearer(
  plan: RoutePlan,
  tx: TxContext,
  tenant: TenantRef,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const limit = plan.attemptLimit;
  await limit?.refuseIfOverLimit(tx, request.ip, reply);
  if (tx.session) return;
  if (limit)
    tx.onRollback(() => plan.services.transactions.run(tenant, (failed) => limit.recordFailure(failed, request.ip)));
  throw problem('TOKEN_INVALID', 'The bearer token is unknown, expired or revoked, or belongs to another site');
}

/** The guard's verdict on the resolved caller, then the session cookie re-issued if this request slid it. */
function admit(plan: RoutePlan, reply: FastifyReply, rawId: string | undefined, session: SessionInfo | null): void {
  plan.guard.admitCaller(session);
  renewSessionCookie(reply, plan.services.config, rawId, session);
}

/**
 * No transaction around the handler. The guard still applies: a short transaction of its own
 * resolves the caller and its permissions before the handler runs (e.g. an upload streams with no
 * transaction open). With an Idempotency-Key, the same short transaction looks for the answer
 * recorded under it: a retry replays it before the handler prepares anything; otherwise the key
 * is claimed in the effect transaction.
 */
function noTransaction(plan: RoutePlan, route: NoTxRouteDefinition): RequestStrategy {
  const { guard } = plan;
  return async (request, reply) => {
    const { tenant, base, bearer, rawId, key, transactions } = arrivalOf(plan, request, reply);
    const txOptions = txOptionsOf(plan, bearer, rawId);
    const guarded =
      guard.requiresCaller || bearer !== undefined
        ? await transactions.run(
            tenant,
            async (tx) => {
              if (bearer !== undefined) await admitBearer(plan, tx, tenant, request, reply);
              admit(plan, reply, rawId, tx.session);
              return {
                session: tx.session,
                earlier:
                  key === undefined
                    ? undefined
                    : await earlierAnswer(tx, plan.services.requestDigestKey, key, request, reply),
              };
            },
            txOptions,
          )
        : { session: null, earlier: undefined };
    if (guarded.earlier) return guarded.earlier.body;
    const transaction = <T>(fn: (tx: TxContext) => Promise<T>): Promise<T> => transactions.run(tenant, fn, txOptions);
    const effectTransaction =
      key === undefined
        ? transaction
        : <T>(fn: (tx: TxContext) => Promise<T>): Promise<T> =>
            transaction(
              (tx) =>
                runIdempotent(tx, plan.services.requestDigestKey, key, request, reply, () => fn(tx)) as Promise<T>,
            );
    return route.handler({ ...base, session: guarded.session, transaction, effectTransaction });
  };
}

/**
 * A route with a step before its transaction (RouteDefinition.beforeTransaction): the caller is
 * resolved and guarded in a short transaction of its own, which also replays the answer recorded
 * under an Idempotency-Key (so a retry prepares nothing); then the step runs with no transaction
 * open and no connection held; then the route's one transaction, as oneTransaction's, whose guard
 * judges the caller again (a session may have ended meanwhile) and whose handler gets the result.
 */
function preparedTransaction(
  plan: RoutePlan,
  route: RouteDefinition,
  step: NonNullable<RouteDefinition['beforeTransaction']>,
): RequestStrategy {
  const { guard } = plan;
  return async (request, reply) => {
    const arrival = arrivalOf(plan, request, reply);
    const { tenant, base, bearer, rawId, key, transactions } = arrival;
    if (route.prepares && !route.prepares(base)) return inTransaction(plan, route, arrival);
    const guarded =
      guard.requiresCaller || bearer !== undefined
        ? await transactions.run(
            tenant,
            async (tx) => {
              if (bearer !== undefined) await admitBearer(plan, tx, tenant, request, reply);
              guard.admitCaller(tx.session);
              return {
                session: tx.session,
                earlier:
                  key === undefined
                    ? undefined
                    : await earlierAnswer(tx, plan.services.requestDigestKey, key, request, reply),
              };
            },
            txOptionsOf(plan, bearer, rawId),
          )
        : { session: null, earlier: undefined };
    if (guarded.earlier) return guarded.earlier.body;
    const prepared = await step({ ...base, session: guarded.session });
    return inTransaction(plan, route, arrival, prepared);
  };
}

/** One tenant transaction: the caller resolved by its opening statement, the guard, the handler, commit. */
function oneTransaction(plan: RoutePlan, route: RouteDefinition): RequestStrategy {
  return (request, reply) => inTransaction(plan, route, arrivalOf(plan, request, reply));
}

function inTransaction(
  plan: RoutePlan,
  route: RouteDefinition,
  arrival: Arrival,
  prepared?: unknown,
): Promise<unknown> {
  const { tenant, base, bearer, rawId, key, transactions } = arrival;
  const { request, reply } = base;
  return transactions.run(
    tenant,
    async (tx) => {
      if (bearer !== undefined) await admitBearer(plan, tx, tenant, request, reply);
      // Before the handler, so a handler that ends the session (logout) clears the cookie last.
      admit(plan, reply, rawId, tx.session);
      // A request with an Idempotency-Key claims it in this transaction, beside its effect.
      const run = () => route.handler({ ...base, tx, prepared });
      if (key === undefined) return run();
      const digestKey = plan.services.requestDigestKey;
      return route.idempotentSecrets
        ? runIdempotent(tx, digestKey, key, request, reply, run, (answer, status) =>
            route.idempotentSecrets!(answer, status),
          )
        : runIdempotent(tx, digestKey, key, request, reply, run);
    },
    txOptionsOf(plan, bearer, rawId),
  );
}

/**
 * One exchange: the route's statement goes with the opening statement, before the caller is known;
 * the guard decides from the opening statement's answer, before the statement's is read. A bearer
 * request (its attempt limit and its failure need a transaction) and a request with an
 * Idempotency-Key (its key is claimed beside the effect) take the route's transaction instead, as
 * does a request the route builds no statement for.
 */
function oneExchange(plan: RoutePlan, route: RouteDefinition, permission: string): RequestStrategy {
  return async (request, reply) => {
    const arrival = arrivalOf(plan, request, reply);
    const { tenant, base, bearer, rawId, key, transactions } = arrival;
    const single = key === undefined && bearer === undefined ? statementOf(route, base) : undefined;
    if (!single) return inTransaction(plan, route, arrival);
    const txOptions = txOptionsOf(plan, undefined, rawId);
    const work = {
      statement: single.statement,
      permission,
      ...(single.events ? { events: single.events } : {}),
    };
    const { session, answer } = await transactions.runStatement(tenant, work, txOptions);
    admit(plan, reply, rawId, session);
    single.admit?.((permission) => holdsPermission(session, permission));
    if (!answer.ok) throw single.failed ? single.failed(answer.error) : answer.error;
    const more = <T>(fn: (tx: TxContext) => Promise<T>): Promise<T> => transactions.run(tenant, fn, txOptions);
    return single.answer(answer.result.rows, more);
  };
}

/**
 * The request's one statement, or undefined for the handler to serve it: a statement the route
 * cannot build from this request (a refused parameter) is the handler's to refuse, after the
 * guard, so that a caller who may not use the route learns nothing from its parameters.
 */
function statementOf(route: RouteDefinition, base: Base): OneExchange | undefined {
  try {
    return route.oneExchange!(base);
  } catch {
    return undefined;
  }
}
