import type { FastifyReply } from 'fastify';
import type { SubscriptionDefinition, TxContext } from '../../framework/entity/define.ts';
import type { BearerAttemptLimit } from '../../framework/access/bearer.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { THROTTLE, attemptsFrom, recordAttempt } from './throttle.ts';
import { tooManyAttempts } from './login.ts';
import { revokeTokensOf } from './tokens.ts';

/**
 * Failed bearer attempts count as failed sign-ins of the client address (kind 'login', no
 * account): the same window and limit as the login route, so guessing tokens and guessing
 * passwords share one budget. Past it, every bearer request from the address is 429 with
 * Retry-After, a valid token's too, as a right password is refused then.
 */
export const bearerAttempts: BearerAttemptLimit = {
  async refuseIfOverLimit(tx: TxContext, source: string, reply: FastifyReply) {
    if ((await attemptsFrom(tx, 'login', source)) >= THROTTLE.login.max) throw tooManyAttempts(reply);
  },
  async recordFailure(tx: TxContext, source: string) {
    await recordAttempt(tx, 'login', source);
  },
};

/**
 * On user.deactivated: deletes the person's tokens. They stop counting the moment the status
 * changes already (a token resolves only for an active user); this ends them for good, so
 * reactivating the person does not bring them back.
 */
export const revokeTokensOnDeactivation: SubscriptionDefinition = {
  name: 'auth-revoke-tokens-on-deactivation',
  event: 'user.deactivated',
  async handle(ctx, event) {
    const id = typeof event.payload.id === 'string' ? event.payload.id : '';
    if (!isUuid(id)) return;
    await revokeTokensOf(ctx, id);
  },
};
