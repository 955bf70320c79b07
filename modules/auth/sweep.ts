import type { JobDefinition, Services, TenantRef, TxContext } from '../../framework/entity/define.ts';
import { purgeExpiredSessions } from '../../framework/access/sessions.ts';
import { purgeAttempts } from './throttle.ts';
import { purgeExpiredTokens } from './tokens.ts';
import './auth-tables.ts';

export const SWEEP_BATCH = 1000;

export interface TenantSweep {
  /** Rows deleted by each transaction, in order: one entry per transaction. */
  sessionBatches: number[];
  tokenBatches: number[];
  /** Expired personal access tokens deleted, per transaction. */
  accessTokenBatches: number[];
  /** Roles naming a permission no module defines, with those permissions. */
  undefinedPermissions: { role: string; permissions: string[] }[];
}

// Expiry is judged on each transaction's clock reading. Each statement deletes at most one batch
// (the subquery picks the rows, since DELETE takes no LIMIT) and answers how many went.
const deletedRows = (result: { numDeletedRows: bigint }): number => Number(result.numDeletedRows);

// Sessions are the framework's identity table: it sweeps them when asked.
const expiredSessions = (ctx: TxContext): Promise<number> => purgeExpiredSessions(ctx, SWEEP_BATCH);

// Spent (used) tokens and pending ones past their expiry are both dead.
const deadTokens = async (ctx: TxContext): Promise<number> =>
  deletedRows(
    await ctx.db
      .deleteFrom('set_password_tokens')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('set_password_tokens')
          .select('id')
          .where((w) => w.or([w('used_at', 'is not', null), w('expires_at', '<=', ctx.now)]))
          .limit(SWEEP_BATCH),
      )
      .executeTakeFirstOrThrow(),
  );

type SweepKind = 'sessions' | 'tokens' | 'accessTokens';

const DELETE_BATCH: Record<SweepKind, (ctx: TxContext) => Promise<number>> = {
  sessions: expiredSessions,
  tokens: deadTokens,
  accessTokens: (ctx) => purgeExpiredTokens(ctx, SWEEP_BATCH),
};

/**
 * One tenant's sweep in as few transactions as its rows allow: each transaction deletes a batch of
 * every kind still pending (and the first also reads the roles), and a kind drops out once its
 * batch comes back short. A tenant with little to delete, the common case, costs one transaction
 * rather than one per kind: at ten thousand tenants the transactions are most of the sweep's time.
 */
export async function sweepTenant(services: Services, tenant: TenantRef): Promise<TenantSweep> {
  const batches: Record<SweepKind, number[]> = { sessions: [], tokens: [], accessTokens: [] };
  let pending: SweepKind[] = ['sessions', 'tokens', 'accessTokens'];
  let roles: { name: string; permissions: string[] }[] | undefined;
  while (pending.length > 0) {
    const kinds = pending;
    const deleted = await services.transactions.run(tenant, async (ctx) => {
      const counts: number[] = [];
      for (const kind of kinds) counts.push(await DELETE_BATCH[kind](ctx));
      roles ??= await ctx.db.selectFrom('roles').select(['name', 'permissions']).orderBy('name').execute();
      return counts;
    });
    for (const [i, kind] of kinds.entries()) batches[kind].push(deleted[i]!);
    pending = kinds.filter((_kind, i) => deleted[i]! >= SWEEP_BATCH);
  }
  const undefinedPermissions = (roles ?? [])
    .map((role) => ({
      role: role.name,
      permissions: role.permissions.filter((p) => p !== '*' && !services.registry.permissions.has(p)),
    }))
    .filter((r) => r.permissions.length > 0);
  for (const { role, permissions } of undefinedPermissions) {
    // Left in place (a module may come back), but it grants nothing today and an operator should know.
    services.log.warn({ tenant: tenant.slug, role, permissions }, 'role names permissions no module defines');
  }
  return {
    sessionBatches: batches.sessions,
    tokenBatches: batches.tokens,
    accessTokenBatches: batches.accessTokens,
    undefinedPermissions,
  };
}

/**
 * Tenants swept at once: each holds one pooled connection for its transaction, so a few overlap
 * their round trips; at most half the pool, so that the requests and jobs of the same process
 * keep connections (one at a time on a pool of one or two).
 */
export const SWEEP_CONCURRENCY = 4;
const sweepConcurrency = (services: Services): number =>
  Math.max(1, Math.min(SWEEP_CONCURRENCY, Math.floor(services.config.database.pool_size / 2)));

/**
 * auth-sweep: purges old rate-limit rows of every tenant at once, then per tenant (suspended ones
 * too: their rows expire all the same; up to SWEEP_CONCURRENCY tenants at a time) deletes expired
 * sessions, dead set-password tokens and expired personal access tokens, a thousand rows of each
 * per transaction, and logs every role naming an undefined permission. Expiry is
 * judged by the clock, so `npm run job -- auth-sweep --at <time>` sweeps as of that time. A tenant
 * that fails does not stop the others, but fails the run once all were tried, so it is retried.
 */
export const authSweep: JobDefinition = {
  name: 'auth-sweep',
  cron: '0 * * * *',
  perTenant: false,
  async run({ services, now }) {
    const attemptsPurged = await purgeAttempts(services.db, now);
    if (attemptsPurged > 0) services.log.info({ attempts: attemptsPurged }, 'auth-sweep purged rate-limit windows');
    // Outside any transaction: the job opens one per tenant and batch.
    const rows = await services.db.kysely
      .selectFrom('tenants')
      .select(['id', 'slug', 'is_operator'])
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const swept: Record<string, { sessions: number; tokens: number; accessTokens: number }> = {};
    const failed: string[] = [];
    let next = 0;
    const sweepNext = async (): Promise<void> => {
      while (next < rows.length) {
        const row = rows[next++]!;
        const tenant: TenantRef = { id: row.id, slug: row.slug, isOperator: row.is_operator };
        try {
          const result = await sweepTenant(services, tenant);
          const sessions = result.sessionBatches.reduce((a, b) => a + b, 0);
          const tokens = result.tokenBatches.reduce((a, b) => a + b, 0);
          const accessTokens = result.accessTokenBatches.reduce((a, b) => a + b, 0);
          if (sessions + tokens + accessTokens > 0) {
            swept[tenant.slug] = { sessions, tokens, accessTokens };
            services.log.info(
              { tenant: tenant.slug, sessions, tokens, accessTokens },
              'auth-sweep deleted expired rows',
            );
          }
        } catch (err) {
          failed.push(tenant.slug);
          services.log.error({ err, tenant: tenant.slug }, 'auth-sweep failed for tenant');
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(sweepConcurrency(services), rows.length) }, sweepNext));
    if (failed.length > 0) throw new Error(`auth-sweep failed for ${failed.join(', ')}`);
    return { attemptsPurged, swept };
  },
};
