import type pg from 'pg';
import type { ModuleDefinition } from '../entity/module-definition.ts';
import type { Registry } from '../entity/registry.ts';
import { BootCheckError } from '../entity/boot-check-error.ts';

/** One row of a module's stored entitlement names (ModuleDefinition.storedEntitlementsSql). */
interface StoredNames {
  holder: string;
  features: string[] | null;
  limits: Record<string, unknown> | null;
}

/**
 * The features and limits the modules' own data names (billing's plans, however they were
 * written: the API refuses an unknown name with 422, a seed straight into the database does not),
 * each against the declarations: one line per unknown name, naming the row and the fix.
 */
export async function storedEntitlementProblems(
  pool: pg.Pool,
  modules: readonly Pick<ModuleDefinition, 'name' | 'storedEntitlementsSql'>[],
  registry: Pick<Registry, 'features' | 'limits'>,
): Promise<string[]> {
  const problems: string[] = [];
  for (const module of modules) {
    if (module.storedEntitlementsSql === undefined) continue;
    const { rows } = await pool.query<StoredNames>(module.storedEntitlementsSql);
    for (const { holder, features, limits } of rows) {
      for (const name of features ?? [])
        if (name !== '*' && !registry.features.has(name))
          problems.push(
            `${holder} (module ${module.name}) grants feature ${name}, which no module declares: take it out of the ${holder}'s features, or declare it in a module's features`,
          );
      for (const name of Object.keys(limits ?? {}))
        if (!registry.limits.has(name))
          problems.push(
            `${holder} (module ${module.name}) sets limit ${name}, which no module declares: take it out of the ${holder}'s limits, or declare it in a module's limits`,
          );
    }
  }
  return problems;
}

/** The boot check of the stored names: refuses to start on any unknown one, listing each. */
export async function checkStoredEntitlements(
  pool: pg.Pool,
  modules: readonly Pick<ModuleDefinition, 'name' | 'storedEntitlementsSql'>[],
  registry: Pick<Registry, 'features' | 'limits'>,
): Promise<void> {
  const problems = await storedEntitlementProblems(pool, modules, registry);
  if (problems.length > 0)
    throw new BootCheckError(
      `startup checks failed: stored plans name undeclared features or limits:\n- ${problems.join('\n- ')}`,
    );
}
