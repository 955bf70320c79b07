/**
 * Who acts in a transaction, as history and the tenant's activity record it: a person through a
 * session or a personal access token, a scheduled job, a subscription delivering an event, the
 * installation's operator acting on a customer tenant, or nobody in particular (the system).
 */

import type { ActingAs, Actor, ActorKind } from '../contracts/actor.ts';

export type { ActingAs, Actor, ActorKind } from '../contracts/actor.ts';

export const ACTOR_KINDS: readonly ActorKind[] = ['user', 'token', 'job', 'subscription', 'operator', 'system'];

export const SYSTEM_ACTOR: Actor = Object.freeze({ kind: 'system', userId: null, name: null });

/** The operator, as a customer tenant sees it: no user of the operator's tenant is named there. */
export const OPERATOR_ACTOR: Actor = Object.freeze({ kind: 'operator', userId: null, name: null });

/**
 * The actor of a transaction, from its caller: a session (or token) names the person; without
 * one, what the transaction was opened for (a job, a subscription acting for the event's actor);
 * else the user it acts for (a sign-in), else the system.
 */
export function actorOf(
  session: { userId: string; via?: 'token'; tokenName?: string } | null,
  actorId: string | null,
  acting: ActingAs | undefined,
): Actor {
  if (session) {
    return session.via === 'token'
      ? { kind: 'token', userId: session.userId, name: session.tokenName ?? null }
      : { kind: 'user', userId: session.userId, name: null };
  }
  if (acting) {
    if (acting.kind === 'operator') return OPERATOR_ACTOR;
    return { kind: acting.kind, userId: actorId, name: acting.name ?? null };
  }
  return actorId ? { kind: 'user', userId: actorId, name: null } : SYSTEM_ACTOR;
}
