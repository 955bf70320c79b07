import type { Entitlements, TxContext } from './transaction.ts';

// Declared beside the session that carries it (transaction.ts), which this file's declarations use.
export type { Entitlements } from './transaction.ts';

/**
 * What a plan grants, declared by the modules like their permissions (ModuleDefinition.features
 * and .limits) and resolved for the request's tenant in the opening statement
 * (framework/entitlements/, docs/billing.md "Entitlements").
 */

/** A capability a plan may or may not include (`webhook.endpoints`), gating routes, commands or a whole entity. */
export interface FeatureDeclaration {
  /** `<module>.<what>`: lowercase words, dots and underscores. */
  name: string;
  /** What the feature gives, for the operator choosing a plan's features. */
  description: string;
}

/** A bound on what a tenant may hold (`user.seats`), checked by the write that would pass it. */
export interface LimitDeclaration {
  name: string;
  /** What one unit is, for people: "seats", "bytes", "endpoints", "tokens". */
  unit: string;
  /** What the limit counts, in a sentence. */
  description: string;
  /**
   * The tenant's current use, in the transaction's own tenant (row-level security scopes it): the
   * framework asks it under the limit's lock (framework/entitlements/limits.ts), so two writes
   * racing for the last unit count one after the other.
   */
  use(ctx: TxContext): Promise<number>;
}

/** Does the tenant have the feature? */
export function grants(entitlements: Entitlements, feature: string): boolean {
  return entitlements.features.has('*') || entitlements.features.has(feature);
}
