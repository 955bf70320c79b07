import type { Entitlements } from '../contracts/entitlements.ts';

/**
 * Who gets what (docs/billing.md, "Entitlements"): the plan the tenant's subscription serves in its
 * current period; with no subscription, a cancelled or ended one, and at the operator tenant,
 * `billing.default_entitlements`; over either, the operator's override of that one tenant. The
 * database part is read by the statement that opens the transaction (context/opening.ts), so it is
 * as fresh as the permissions beside it: no cache.
 */

/** What the opening statement reads for the tenant: its override, the plan served, whether it is the operator. */
export interface EntitlementSource {
  override: { features?: string[]; limits?: Record<string, number | null> } | null;
  plan: { features: string[]; limits: Record<string, number> } | null;
  operator: boolean;
}

/** billing.default_entitlements, as configured. */
export interface EntitlementDefaults {
  features: readonly string[];
  limits: Readonly<Record<string, number>>;
}

/** Every feature, no limit: an installation that configures no plan. */
export const EVERYTHING: EntitlementDefaults = { features: ['*'], limits: {} };

/**
 * The SQL of the tenant's source, one json value, for a tenant given as `tenant` (a uuid parameter
 * or app_tenant_id()): the framework's part (the operator's override, whether it is the operator
 * tenant) and the plan served now, from the module that keeps plans (`plan`,
 * ModuleDefinition.planEntitlementsSql); without one, no plan: the defaults apply.
 */
export function entitlementSourceSql(tenant: string, plan?: (tenant: string) => string): string {
  return `(select json_build_object(
                 'override', t.entitlements,
                 'operator', t.is_operator,
                 'plan', ${plan ? plan(tenant) : 'null::json'})
          from tenants t where t.id = ${tenant})`;
}

/** The tenant's entitlements from its source and the installation's defaults. */
export function resolveEntitlements(
  source: EntitlementSource | null | undefined,
  defaults: EntitlementDefaults,
): Entitlements {
  const base = source?.plan && !source.operator ? source.plan : defaults;
  const override = source?.override ?? null;
  const limits: Record<string, number> = { ...base.limits };
  for (const [name, value] of Object.entries(override?.limits ?? {})) {
    if (value === null) delete limits[name];
    else limits[name] = value;
  }
  return { features: new Set(override?.features ?? base.features), limits };
}
