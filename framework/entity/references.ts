import type { AnyEntity } from './define.ts';
import { entityNames, snakeCase } from './names.ts';

/**
 * An entity's references (`ownerId: 'user.user'`): the one place a relation is named. The foreign
 * key (framework/schema/), the admin shell's picker, the query language's expansion and the test
 * samples all read it from here.
 */
export function declaredReferences(def: AnyEntity): Readonly<Record<string, string>> {
  const references: Readonly<Record<string, string | undefined>> = def.admin?.references ?? {};
  return Object.fromEntries(
    Object.entries(references).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

// PostgreSQL keeps 63 bytes of an identifier; the names here are ASCII.
const IDENTIFIER_LENGTH = 63;
const identifier = (name: string): string => name.slice(0, IDENTIFIER_LENGTH);

/** The foreign key a reference field's column carries: `<table>_<column>_fkey`, as PostgreSQL names a column's. */
export const referenceConstraintName = (table: string, column: string): string => identifier(`${table}_${column}_fkey`);

/** The unique key `(tenant_id, id)` a tenant-owned table needs to be the target of a composite foreign key. */
export const tenantRowKeyName = (table: string): string => identifier(`${table}_tenant_id_id_key`);

/** A reference as the table carries it: the foreign key from the field's column to the target's id. */
export interface ReferenceKey {
  /** The constraint's name (referenceConstraintName). */
  name: string;
  field: string;
  column: string;
  /** The target entity's key (`user.user`) and table (`users`). */
  target: string;
  targetTable: string;
  /**
   * Both tables tenant-owned: `(tenant_id, column) → target (tenant_id, id)`, so the database
   * itself refuses a row of another tenant. A global target (a plan) is named by its id alone.
   */
  composite: boolean;
}

const tenantOwned = (def: AnyEntity): boolean => def.scope !== 'global';

/** The entity's table, as resolveEntity names it (the storage part's, or the plural's). */
const tableOf = (def: AnyEntity): string => entityNames({ ...def, table: def.storage?.table }).table;

/** Finds an entity by its key among the given ones. */
export function entityByKey(entities: readonly AnyEntity[], key: string): AnyEntity | undefined {
  return entities.find((e) => `${e.module}.${e.name}` === key);
}

/**
 * The foreign keys an entity's references call for. A target no given entity has is refused, as
 * the boot check (referenceProblems) refuses it: no key is guessed, and none dropped for it.
 */
export function referenceKeys(def: AnyEntity, entities: readonly AnyEntity[]): ReferenceKey[] {
  const table = tableOf(def);
  const keys: ReferenceKey[] = [];
  for (const [field, target] of Object.entries(declaredReferences(def))) {
    const found = entityByKey(entities, target);
    if (!found) throw new Error(referenceProblems(def, entities).join('\n'));
    const column = snakeCase(field);
    keys.push({
      name: referenceConstraintName(table, column),
      field,
      column,
      target,
      targetTable: tableOf(found),
      composite: tenantOwned(def) && tenantOwned(found),
    });
  }
  return keys;
}

/** Whether some entity names this one by a composite foreign key, so its table needs `(tenant_id, id)` unique. */
export function referencedWithinTenant(def: AnyEntity, entities: readonly AnyEntity[]): boolean {
  const key = `${def.module}.${def.name}`;
  return (
    tenantOwned(def) &&
    entities.some((other) => tenantOwned(other) && Object.values(declaredReferences(other)).includes(key))
  );
}

/**
 * The boot check's lines for an entity's references: each names a registered entity (module.entity),
 * and a global entity names no tenant-owned row (no tenant would own the relation).
 */
export function referenceProblems(def: AnyEntity, entities: readonly AnyEntity[]): string[] {
  const where = `entity ${def.module}.${def.name}`;
  const problems: string[] = [];
  for (const [field, target] of Object.entries(declaredReferences(def))) {
    const found = entityByKey(entities, target);
    if (!found) {
      const known = entities.map((e) => `${e.module}.${e.name}`);
      const near = known.filter((k) => k.split('.')[1] === target.split('.').at(-1) || k.startsWith(`${target}.`));
      problems.push(
        `${where}: references.${field} names ${target}, which is no registered entity: write the target as module.entity${near.length ? ` (${near.map((k) => `'${k}'`).join(' or ')}?)` : ''}, or register its module`,
      );
    } else if (!tenantOwned(def) && tenantOwned(found)) {
      problems.push(
        `${where}: references.${field} names the tenant-owned ${target} from a global entity: no tenant owns the relation; make the field a plain id or the entity tenant-owned`,
      );
    }
  }
  return problems;
}
