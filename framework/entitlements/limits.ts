import { CompiledQuery, type Transaction } from 'kysely';
import type { Database } from '../db/types.ts';
import { grants, type Entitlements, type LimitDeclaration } from '../contracts/entitlements.ts';
import type { TxContext } from '../contracts/transaction.ts';
import { problem } from '../errors.ts';
import {
  entitlementSourceSql,
  resolveEntitlements,
  type EntitlementDefaults,
  type EntitlementSource,
} from './resolve.ts';

/** One limit as a client reads it (GET /api/v1/billing/entitlements): its value (null: no bound) and the current use. */
export interface LimitUse {
  name: string;
  unit: string;
  description: string;
  value: number | null;
  use: number;
}

/**
 * The plan's limits of one installation: what a write that adds to a limit asks
 * (admitLimit, and the generic create of an entity declaring `limit`), and what the entitlements
 * route answers. Made once at boot from the declared limits and billing.default_entitlements.
 */
export class PlanLimits {
  private readonly declared: ReadonlyMap<string, LimitDeclaration>;
  private readonly defaults: EntitlementDefaults;
  /** The declared feature names, which a plan's or an override's `features` must be among. */
  readonly features: ReadonlySet<string>;

  /** The tenant's entitlement source, read in the transaction (a job, an import, a request without a caller). */
  private readonly source: string;

  constructor(
    declared: ReadonlyMap<string, LimitDeclaration>,
    defaults: EntitlementDefaults,
    features: Iterable<string> = [],
    plan?: (tenant: string) => string,
  ) {
    this.source = `select ${entitlementSourceSql('app_tenant_id()', plan)} as entitlements`;
    this.declared = declared;
    this.defaults = defaults;
    this.features = new Set(features);
  }

  /** The declared limit names, which a plan's or an override's `limits` must be among. */
  get limitNames(): ReadonlySet<string> {
    return new Set(this.declared.keys());
  }

  /**
   * The transaction's entitlements: those the opening statement resolved with the caller's
   * permissions, or (no caller: a job, an import's worker) read now in the same transaction.
   */
  async entitlementsOf(ctx: TxContext): Promise<Entitlements> {
    if (ctx.session?.entitlements) return ctx.session.entitlements;
    // Read once per transaction, as the opening statement reads a caller's: an import's batch of
    // 500 rows asks for every row's create.
    const read = readByTransaction.get(ctx.db);
    if (read) return read;
    const result = await ctx.db.executeQuery<{ entitlements: EntitlementSource | null }>(
      CompiledQuery.raw(this.source, []),
    );
    const entitlements = resolveEntitlements(result.rows[0]?.entitlements, this.defaults);
    readByTransaction.set(ctx.db, entitlements);
    return entitlements;
  }

  /**
   * Refuses a write that would take the tenant past the limit's value: 403 PLAN_LIMIT_REACHED naming
   * the limit, its value and the current use. With a bound, the limit's lock is taken first: a
   * transaction-scoped advisory lock per tenant and limit, so writes racing for the last unit count
   * one after the other, each after the previous one committed or rolled back (under READ COMMITTED
   * the count, a statement after the lock, sees the earlier write). An advisory lock rather than the
   * subscription's row: a limit holds without a subscription (the defaults, an override), and
   * writers of one limit do not wait on the renewal or on writers of another limit. Without a bound,
   * no lock and no count. A use already past the value (a downgrade) refuses new use; nothing
   * existing is removed.
   */
  async admit(ctx: TxContext, name: string, adding: number): Promise<void> {
    const declared = this.declaredLimit(name);
    const value = (await this.entitlementsOf(ctx)).limits[name];
    if (value === undefined) return;
    await lock(ctx.db, lockKey(ctx, name));
    const use = await declared.use(ctx);
    if (use + adding > value) throw reached(declared, value, use);
  }

  /**
   * Runs a write that may make rows count again without creating one (a PATCH putting an endpoint
   * back to active, a restore bringing a deleted user back, a command), and refuses it, 403
   * PLAN_LIMIT_REACHED, when it took the tenant's use past the limit's value. What counts is the
   * limit's own declared count, asked before and after the write: no second statement of the rule.
   * The limit's lock is taken first, the same lock admit takes, so a write racing a create or
   * another such write for the last unit counts after it. A write that does not grow the use (a
   * rename at a tenant already past its value, after a downgrade) passes. Without a bound: no lock,
   * no count.
   */
  async keepWithin<T>(ctx: TxContext, name: string, write: () => Promise<T>): Promise<T> {
    const declared = this.declaredLimit(name);
    const value = (await this.entitlementsOf(ctx)).limits[name];
    if (value === undefined) return write();
    await lock(ctx.db, lockKey(ctx, name));
    const before = await declared.use(ctx);
    const result = await write();
    const after = await declared.use(ctx);
    if (after > before && after > value) throw reached(declared, value, before);
    return result;
  }

  private declaredLimit(name: string): LimitDeclaration {
    const declared = this.declared.get(name);
    if (!declared) throw new Error(`limit ${name} is not declared by any module`);
    return declared;
  }

  /** Every declared limit with its value and the tenant's use, for the entitlements route. */
  async uses(ctx: TxContext): Promise<{ entitlements: Entitlements; limits: LimitUse[] }> {
    const entitlements = await this.entitlementsOf(ctx);
    const limits: LimitUse[] = [];
    for (const declared of this.declared.values()) {
      limits.push({
        name: declared.name,
        unit: declared.unit,
        description: declared.description,
        value: entitlements.limits[declared.name] ?? null,
        use: await declared.use(ctx),
      });
    }
    return { entitlements, limits };
  }
}

/** The limit's lock for the transaction's tenant: one per tenant and limit. */
const lockKey = (ctx: TxContext, name: string) => `plan-limit:${ctx.tenant.id}:${name}`;

/** 403 PLAN_LIMIT_REACHED naming the limit, its value and the use the write would have added to. */
const reached = (declared: LimitDeclaration, value: number, use: number) =>
  problem('PLAN_LIMIT_REACHED', `Your plan allows ${value} ${declared.unit} and ${use} are in use.`, {
    extensions: { limit: declared.name, value, use },
  });

/** The entitlements a transaction without a caller read (PlanLimits.entitlementsOf), by transaction. */
const readByTransaction = new WeakMap<Transaction<Database>, Entitlements>();

async function lock(db: Transaction<Database>, key: string): Promise<void> {
  await db.executeQuery(CompiledQuery.raw('select pg_advisory_xact_lock(hashtextextended($1, 0))', [key]));
}

/** The installation's plan limits, by each transaction TenantTransactions.run opened. */
const limitsByTransaction = new WeakMap<Transaction<Database>, PlanLimits>();

export function attachPlanLimits(trx: Transaction<Database>, limits: PlanLimits): void {
  limitsByTransaction.set(trx, limits);
}

/** The plan limits of the installation whose transaction this is. */
export function planLimitsOf(ctx: Pick<TxContext, 'db'>): PlanLimits {
  const limits = limitsByTransaction.get(ctx.db);
  if (!limits) throw new Error('a plan limit needs a transaction opened by TenantTransactions.run');
  return limits;
}

/**
 * Refuses a write that would take the transaction's tenant past a declared limit (403
 * PLAN_LIMIT_REACHED), counting `adding` units: what a module's own write path calls before it
 * writes (an invitation, an upload, a token), under the limit's lock (PlanLimits.admit).
 */
export function admitLimit(ctx: TxContext, name: string, adding = 1): Promise<void> {
  return planLimitsOf(ctx).admit(ctx, name, adding);
}

/**
 * Runs a write that may make rows count against a declared limit again (PlanLimits.keepWithin):
 * refused, 403 PLAN_LIMIT_REACHED, when it took the tenant past the limit's value.
 */
export function keepWithinLimit<T>(ctx: TxContext, name: string, write: () => Promise<T>): Promise<T> {
  return planLimitsOf(ctx).keepWithin(ctx, name, write);
}

/**
 * Refuses, 403 FEATURE_NOT_IN_PLAN, a write whose value asks for a feature the tenant's plan lacks
 * (a public file): for what a route's `feature` cannot say, since it depends on the request's
 * values. A route, command or entity gated as a whole declares `feature` instead.
 */
export async function requireFeature(ctx: TxContext, feature: string): Promise<void> {
  const entitlements = await planLimitsOf(ctx).entitlementsOf(ctx);
  if (!grants(entitlements, feature))
    throw problem('FEATURE_NOT_IN_PLAN', `The tenant's plan does not include the feature ${feature}`, {
      extensions: { feature },
    });
}

/**
 * Refuses, 422 VALIDATION_FAILED at each offending name, a plan's or an override's `features` or
 * `limits` naming a feature or limit no module declares (`at`: the body's pointer, /body).
 */
export function checkEntitlementNames(
  ctx: Pick<TxContext, 'db'>,
  values: { features?: readonly string[] | null; limits?: Readonly<Record<string, unknown>> | null },
  at = '/body',
): void {
  const limits = planLimitsOf(ctx);
  const errors: { pointer: string; message: string }[] = [];
  (values.features ?? []).forEach((name, i) => {
    if (!limits.features.has(name))
      errors.push({ pointer: `${at}/features/${i}`, message: `no module declares the feature ${name}` });
  });
  const limitNames = limits.limitNames;
  for (const name of Object.keys(values.limits ?? {}))
    if (!limitNames.has(name))
      errors.push({
        pointer: `${at}/limits/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`,
        message: `no module declares the limit ${name}`,
      });
  if (errors.length > 0) throw problem('VALIDATION_FAILED', errors.map((e) => e.message).join('; '), { errors });
}
