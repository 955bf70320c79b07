import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { SECRET } from '../entity/secret-field.ts';

/**
 * Which of an entity's fields its history records, decided from the declaration alone: every field
 * except those declared unrecorded (`history: { exclude }`) and the secret ones (marked Secret()),
 * which never are. Computed fields have no column and are never recorded; a table's extra columns
 * (storage.columns: a password hash, a signing secret) are no fields, so no revision can carry them.
 * Undefined for an entity declared `history: false`.
 */
export interface HistoryPlan {
  /** The recorded fields, in declaration order. */
  readonly recorded: readonly string[];
  /** The fields never recorded: declared so, or secret. */
  readonly unrecorded: readonly string[];
}

export const isSecretSchema = (schema: TSchema | undefined): boolean =>
  (schema as Record<string, unknown> | undefined)?.[SECRET] === true;

export function historyPlan(entity: ResolvedEntity): HistoryPlan | undefined {
  const declared = entity.def.history;
  if (declared === false) return undefined;
  const excluded = new Set<string>(declared?.exclude ?? []);
  const unrecorded = entity.fields.filter((f) => excluded.has(f) || isSecretSchema(entity.def.fields[f]));
  return Object.freeze({
    recorded: entity.fields.filter((f) => !unrecorded.includes(f)),
    unrecorded,
  });
}

/**
 * The names no revision may carry, from the declarations: the unrecorded fields, the secret
 * computed fields and the table's extra columns (as columns and as field names). What the test
 * of every module's revisions checks against (test/framework/history-secrets.test.ts).
 */
export function neverRecordedNames(entity: ResolvedEntity): string[] {
  const plan = historyPlan(entity);
  const computedSecrets = Object.entries(entity.def.computed ?? {})
    .filter(([, schema]) => isSecretSchema(schema))
    .map(([name]) => name);
  const columns = Object.keys(entity.def.storage?.columns ?? {});
  const camel = (column: string) => column.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  return [...new Set([...(plan?.unrecorded ?? []), ...computedSecrets, ...columns, ...columns.map(camel)])];
}
