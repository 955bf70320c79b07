import type { UniqueKey } from '../db/unique-keys.ts';
import type { ResolvedEntity } from './resolve.ts';
import { snakeCase } from './names.ts';

/**
 * The unique keys an entity's declaration implies, by index name: each storage.unique field's
 * `<table>_<column>_unique` (the name the migration generator gives it, framework/schema/desired.ts)
 * and each uniqueCodes index, with the field a 409 points at and its sentence (`message`, or
 * "A <entity> with this <field> already exists").
 */
export function entityUniqueKeys(entity: ResolvedEntity): Record<string, UniqueKey> {
  const { def, names } = entity;
  const label = names.label.toLowerCase();
  const words = (field: string) => snakeCase(field).replaceAll('_', ' ');
  const detail = (field: string, message: string | undefined) =>
    message ?? `${/^[aeiou]/i.test(label) ? 'An' : 'A'} ${label} with this ${words(field)} already exists`;
  const keys: Record<string, UniqueKey> = {};
  for (const [field, rule] of Object.entries(def.uniqueCodes ?? {}))
    if (rule) keys[rule.index] = { fields: [field], detail: detail(field, undefined) };
  for (const entry of def.storage?.unique ?? []) {
    const { field, message } = typeof entry === 'string' ? { field: entry, message: undefined } : entry;
    if (field in (def.uniqueCodes ?? {})) continue;
    keys[`${names.table}_${snakeCase(field)}_unique`] = { fields: [field], detail: detail(field, message) };
  }
  return keys;
}
