import type { FastifyReply } from 'fastify';
import type { TxContext } from './transaction.ts';

/**
 * How failed bearer attempts are counted and limited, provided by a module
 * (ModuleDefinition.bearerAttempts; modules/auth counts them with failed logins, per client address).
 */
export interface BearerAttemptLimit {
  /**
   * Runs first in a bearer request's transaction, before the token counts: throws the refusal
   * (setting its headers on reply, e.g. Retry-After) when this client address has failed too often.
   */
  refuseIfOverLimit(tx: TxContext, source: string, reply: FastifyReply): Promise<void>;
  /** Counts one failed attempt, in a transaction of its own (the request's rolled back). */
  recordFailure(tx: TxContext, source: string): Promise<void>;
}
