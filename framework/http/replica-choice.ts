import type { FastifyReply, FastifyRequest } from 'fastify';
import Type, { type TSchema } from 'typebox';
import type { AnyRoute } from '../entity/define.ts';
import type { Services } from '../services.ts';
import type { Transactions } from '../contracts/transaction.ts';

/**
 * Which transactions serve a request of a route that may read from the replica
 * (RouteDefinition.replica, context/replica-reads.ts): decided at registration for every other
 * route (the primary's, always), and per request only where the request or the lag decides.
 */

export const PREFER_HEADER = 'prefer';
export const PREFERENCE_APPLIED = 'preference-applied';
/** The preference (RFC 7240) a caller sends to read from the replica, and that the answer names when honoured. */
export const REPLICA_PREFERENCE = 'replica';

/** The description of the Prefer header on the routes that take it (OpenAPI). */
export const REPLICA_PREFERENCE_DESCRIPTION =
  'replica: read from the read replica, when the installation has one (database.replica_url). Eventually consistent: ' +
  'the answer may be up to database.replica_max_lag_ms behind the latest writes (a row just created may be missing, ' +
  'one just changed may show its earlier values). The answer carries Preference-Applied: replica when the replica ' +
  'served it; without it the primary did (no replica, or one lagging past the bound). Other preferences are ignored.';

/** The headers schema of a route that reads from the replica on request. */
export const replicaPreferenceHeaders: TSchema = Type.Object({
  [PREFER_HEADER]: Type.Optional(Type.String({ maxLength: 1000, description: REPLICA_PREFERENCE_DESCRIPTION })),
});

/** Whether the request's Prefer header (a comma-separated list of preferences, each maybe with parameters) names replica. */
export function prefersReplica(request: Pick<FastifyRequest, 'headers'>): boolean {
  const value = request.headers[PREFER_HEADER];
  if (value === undefined) return false;
  for (const header of Array.isArray(value) ? value : [value]) {
    for (const preference of header.split(',')) {
      const token = preference.split(/[;=]/, 1)[0]!.trim().toLowerCase();
      if (token === REPLICA_PREFERENCE) return true;
    }
  }
  return false;
}

/** The route's choice of transactions, one call per request. */
export function transactionsFor(
  route: AnyRoute,
  services: Services,
): (request: FastifyRequest, reply: FastifyReply) => Transactions {
  const replica = services.replica;
  const use = route.replica;
  if (!use || !replica) return () => services.transactions;
  return (request, reply) => {
    const asked = prefersReplica(request);
    if (use === 'on-request' && !asked) return services.transactions;
    if (!asked) return replica.forRead().transactions;
    // Named as soon as the replica is chosen; taken back if the primary serves after all.
    const chosen = replica.forRead(() => reply.removeHeader(PREFERENCE_APPLIED));
    if (chosen.replica) reply.header(PREFERENCE_APPLIED, REPLICA_PREFERENCE);
    return chosen.transactions;
  };
}
