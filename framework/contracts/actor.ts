/**
 * Who acts in a transaction, as history and the tenant's activity record it: a person through a
 * session or a personal access token, a scheduled job, a subscription delivering an event, the
 * installation's operator acting on a customer tenant, or nobody in particular (the system).
 * (framework/context/actor.ts says who from the transaction's caller.)
 */

export type ActorKind = 'user' | 'token' | 'job' | 'subscription' | 'operator' | 'system';

export interface Actor {
  kind: ActorKind;
  /** The person who acted (or for whom a subscription acts); null for a job, the operator, the system. */
  userId: string | null;
  /** The token's name (kind token), the job's (job) or the subscription's (subscription); else null. */
  name: string | null;
}

/**
 * What a transaction is opened for when no session says it: a job's run, a subscription's delivery,
 * the operator, or work a person's personal access token asked for earlier (an import's rows).
 */
export interface ActingAs {
  kind: 'job' | 'subscription' | 'operator' | 'token';
  name?: string;
}
