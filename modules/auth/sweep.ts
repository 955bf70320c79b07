import type { JobDefinition } from '../../framework/entity/define.ts';
import type { Services } from '../../framework/services.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { TxContext } from '../../framework/context/tx.ts';
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

const expiredSessions = async (ctx: TxContext): Promise<number> =>
  deletedRows(
    await ctx.db
      .deleteFrom('sessions')
      .where('id', 'in', (eb) => eb.selectFrom('sessions').select('id').where('expires_at', '<=', ctx.now).limit(SWEEP_BATCH))
      .executeTakeFirstOrThrow(),
  );

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

/** Deletes in batches, a transaction each, until a batch comes back short. */
async function drain(services: Services, tenant: TenantRef, deleteBatch: (ctx: TxContext) => Promise<number>): Promise<number[]> {
  const batches: number[] = [];
  for (;;) {
    const deleted = await services.transactions.run(tenant, deleteBatch);
    batches.push(deleted);
    if (deleted < SWEEP_BATCH) return batches;
  }
}

export async function sweepTenant(services: Services, tenant: TenantRef): Promise<TenantSweep> {
  const sessionBatches = await drain(services, tenant, expiredSessions);
  const tokenBatches = await drain(services, tenant, deadTokens);
  const accessTokenBatches = await drain(services, tenant, (ctx) => purgeExpiredTokens(ctx, SWEEP_BATCH));
  const roles = await services.transactions.run(tenant, (ctx) => ctx.db.selectFrom('roles').select(['name', 'permissions']).orderBy('name').execute());
  const undefinedPermissions = roles
    .map((role) => ({ role: role.name, permissions: role.permissions.filter((p) => p !== '*' && !services.registry.permissions.has(p)) }))
    .filter((r) => r.permissions.length > 0);
  for (const { role, permissions } of undefinedPermissions) {
    // Left in place (a module may come back), but it grants nothing today and an operator should know.
    services.log.warn({ tenant: tenant.slug, role, permissions }, 'role names permissions no module defines');
  }
  return { sessionBatches, tokenBatches, accessTokenBatches, undefinedPermissions };
}

/**
 * auth-sweep: purges old rate-limit rows of every tenant at once, then per tenant (suspended ones
 * too: their rows expire all the same) deletes expired sessions, dead set-password tokens and expired personal access tokens a
 * thousand rows per transaction, and logs every role naming an undefined permission. Expiry is
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
    const rows = await services.db.kysely.selectFrom('tenants').select(['id', 'slug', 'is_operator']).orderBy('created_at').orderBy('id').execute();
    const swept: Record<string, { sessions: number; tokens: number; accessTokens: number }> = {};
    const failed: string[] = [];
    for (const row of rows) {
      const tenant: TenantRef = { id: row.id, slug: row.slug, isOperator: row.is_operator };
      try {
        const result = await sweepTenant(services, tenant);
        const sessions = result.sessionBatches.reduce((a, b) => a + b, 0);
        const tokens = result.tokenBatches.reduce((a, b) => a + b, 0);
        const accessTokens = result.accessTokenBatches.reduce((a, b) => a + b, 0);
        if (sessions + tokens + accessTokens > 0) {
          swept[tenant.slug] = { sessions, tokens, accessTokens };
          services.log.info({ tenant: tenant.slug, sessions, tokens, accessTokens }, 'auth-sweep deleted expired rows');
        }
      } catch (err) {
        failed.push(tenant.slug);
        services.log.error({ err, tenant: tenant.slug }, 'auth-sweep failed for tenant');
      }
    }
    if (failed.length > 0) throw new Error(`auth-sweep failed for ${failed.join(', ')}`);
    return { attemptsPurged, swept };
  },
};
