import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { derivedContext, type PublishAllowList, type SessionInfo, type TxContext } from '../context/tx.ts';
import { problem } from '../errors.ts';
import type { TenantRef } from '../context/tenant.ts';

/**
 * One request of a batch (POST /api/v1/batch, framework/bulk/batch.ts) while it goes through the
 * request path: the batch dispatches it with fastify's `inject`, so its hooks, guard, validation,
 * protected-field checks and handler are the route's own, and the route's strategy
 * (http/request-strategies.ts), finding it, runs the handler in the batch's transaction instead of
 * opening one. The dispatched request names its member by a random token in a header, live only
 * while the batch dispatches it (the async context does not survive inject's body stream): a
 * token a client might send names no member, and its request is served as any other.
 */
export type BatchMember = BatchMemberPreparing | BatchMemberRunning;

/**
 * A request of a batch while the batch prepares (before its transaction opens): a route with a
 * step before its transaction (RouteDefinition.beforeTransaction) runs that step, for the batch's
 * caller, and leaves its result here for the run.
 */
export interface BatchMemberPreparing {
  readonly phase: 'prepare';
  /** The batch's tenant. */
  readonly tenant: TenantRef;
  /** The batch's caller, resolved and guarded before the batch prepared anything. */
  readonly session: SessionInfo | null;
  /** What the route's step returned. */
  prepared?: unknown;
  /** Set by the strategy that ran the route's step. */
  served?: { operationId: string };
}

/** A request of a batch in the batch's transaction. */
export interface BatchMemberRunning {
  readonly phase: 'run';
  /** The batch's tenant. */
  readonly tenant: TenantRef;
  /** The batch's transaction: every request of the batch reads and writes through it. */
  readonly tx: TxContext;
  /** What the route's step returned when the batch prepared this request (undefined: it has none). */
  readonly prepared?: unknown;
  /** Set by the strategy that ran the route's handler in the batch's transaction. */
  served?: { operationId: string };
}

/** The header naming a dispatched request's member. */
export const BATCH_MEMBER_HEADER = 'x-tenantry-batch-member';

const members = new Map<string, BatchMember>();

/** The batch member a request is, if it is one. */
export function batchMemberOf(headers: IncomingHttpHeaders): BatchMember | undefined {
  const token = headers[BATCH_MEMBER_HEADER];
  return typeof token === 'string' ? members.get(token) : undefined;
}

/** Runs fn (the dispatch of one request of a batch) with the header that names the member, live until fn settles. */
export async function asBatchMember<T>(
  member: BatchMember,
  fn: (header: Record<string, string>) => Promise<T>,
): Promise<T> {
  const token = randomUUID();
  members.set(token, member);
  try {
    return await fn({ [BATCH_MEMBER_HEADER]: token });
  } finally {
    members.delete(token);
  }
}

/**
 * The batch's transaction as one of its requests sees it: its publish is held to the route's own
 * list (as its transaction would be, were it sent alone), and a public route sees no caller.
 */
export function memberContext(tx: TxContext, publishes: PublishAllowList, caller: boolean): TxContext {
  const publish: TxContext['publish'] = (name, payload) => {
    if (!publishes.events.has(name))
      throw problem(
        'INTERNAL',
        `event ${name} is not in the publishes list of ${publishes.by} (${[...publishes.events].join(', ') || 'none'})`,
      );
    tx.publish(name, payload);
  };
  return derivedContext(tx, caller ? { publish } : { publish, session: null, actorId: null, can: () => false });
}

/** A route that manages its own transactions cannot be one request of a batch's one transaction. */
export const notBatchable = (what: string) =>
  problem(
    'BATCH_REQUEST_UNSUPPORTED',
    `${what} runs outside a transaction of its own (an upload, a prepared command) and cannot be part of a batch; send it alone`,
  );
