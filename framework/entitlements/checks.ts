import type { RegisteredRoute } from '../contracts/composition.ts';
import type { Registry } from '../entity/registry.ts';

const NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

/**
 * The boot checks of features and limits (docs/billing.md): each declared name is `<module>.<what>`,
 * and every feature a route, command or entity is gated by, and every limit an entity counts, is
 * declared by some module. A public route cannot be gated: it has no caller to refuse.
 */
export function entitlementProblems(registry: Registry, routes: readonly RegisteredRoute[]): string[] {
  const problems: string[] = [];
  for (const name of [...registry.features.keys(), ...registry.limits.keys()])
    if (!NAME.test(name)) problems.push(`feature or limit ${name} is not named <module>.<what> in lowercase`);
  const feature = (where: string, name: string | undefined) => {
    if (name !== undefined && !registry.features.has(name))
      problems.push(`${where} is gated by undeclared feature ${name}`);
  };
  for (const entity of registry.entities) {
    const { def } = entity;
    feature(`entity ${entity.names.key}`, def.feature);
    if (def.limit !== undefined && !registry.limits.has(def.limit))
      problems.push(`entity ${entity.names.key} counts undeclared limit ${def.limit}`);
    for (const [name, command] of Object.entries(def.commands ?? {}))
      feature(`command ${name} of entity ${entity.names.key}`, command.feature);
  }
  for (const { module, route } of routes) {
    const where = `route ${route.method} ${route.url} (module ${module})`;
    feature(where, route.feature);
    feature(where, route.entitlements?.feature);
    const limit = route.entitlements?.limit;
    if (limit !== undefined && !registry.limits.has(limit)) problems.push(`${where} counts undeclared limit ${limit}`);
    if (route.feature !== undefined && route.access === 'public')
      problems.push(`${where} is public and gated by feature ${route.feature}: a public route has no plan to ask`);
  }
  return problems;
}

/**
 * billing.default_entitlements against the declarations: what a tenant without a plan gets must
 * name declared features and limits, or a feature it meant to grant would silently grant nothing
 * and a limit would bound nothing. One line per unknown name, saying what to do.
 */
export function defaultEntitlementProblems(
  registry: Pick<Registry, 'features' | 'limits'>,
  defaults: { readonly features: readonly string[]; readonly limits: Readonly<Record<string, number>> },
): string[] {
  const key = 'billing.default_entitlements';
  return [
    ...defaults.features
      .filter((name) => name !== '*' && !registry.features.has(name))
      .map(
        (name) =>
          `${key}.features names ${name}, which no module declares: remove it from config.yaml, or declare it in a module's features (declared: ${known(registry.features.keys())})`,
      ),
    ...Object.keys(defaults.limits)
      .filter((name) => !registry.limits.has(name))
      .map(
        (name) =>
          `${key}.limits names ${name}, which no module declares: remove it from config.yaml, or declare it in a module's limits (declared: ${known(registry.limits.keys())})`,
      ),
  ];
}

const known = (names: Iterable<string>): string => [...names].sort().join(', ') || 'none';
