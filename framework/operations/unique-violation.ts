import type { ResolvedEntity } from '../entity/resolve.ts';
import { declaredReferences, referenceConstraintName } from '../entity/references.ts';
import { snakeCase } from '../entity/names.ts';
import { problem } from '../errors.ts';

interface ReferenceField {
  field: string;
  /** The target entity's name, for the sentence (`user` of `user.user`). */
  target: string;
}

// Worked out once per entity: its references' foreign key names → the field each carries.
const referenceFields = new WeakMap<ResolvedEntity, ReadonlyMap<string, ReferenceField>>();

function referencesOf(entity: ResolvedEntity): ReadonlyMap<string, ReferenceField> {
  let found = referenceFields.get(entity);
  if (!found) {
    found = new Map(
      Object.entries(declaredReferences(entity.def)).map(([field, target]) => [
        referenceConstraintName(entity.names.table, snakeCase(field)),
        { field, target: target.split('.').at(-1)! },
      ]),
    );
    referenceFields.set(entity, found);
  }
  return found;
}

/**
 * A write refused by a unique index the entity names in uniqueCodes answers that code (e.g.
 * SLUG_TAKEN) instead of the generic ALREADY_EXISTS; one refused by a reference's foreign key
 * (23503 on the entity's own table: the id names no row of the tenant, whatever the module's hooks
 * let through) answers 422 VALIDATION_FAILED pointing at the field. The transaction is rolled back
 * either way. Any other error is returned as it is.
 */
export function uniqueFailure(entity: ResolvedEntity, err: unknown): unknown {
  const { code, constraint, table } = err as { code?: string; constraint?: string; table?: string };
  if (code === '23505') {
    for (const [field, rule] of Object.entries(entity.def.uniqueCodes ?? {})) {
      if (rule && rule.index === constraint) {
        return problem(rule.code, `${field} is already used by another ${entity.names.label.toLowerCase()}`, {
          extensions: { field },
        });
      }
    }
  }
  // On the referencing table: the row written names a missing row (a delete of a referenced row reports the target's table).
  const reference =
    code === '23503' && table === entity.names.table && constraint && referencesOf(entity).get(constraint);
  if (reference) {
    return problem('VALIDATION_FAILED', `${reference.field} names no ${reference.target} of this tenant`, {
      errors: [{ pointer: `/body/${reference.field}`, message: `names no ${reference.target} of this tenant` }],
      extensions: { field: reference.field },
    });
  }
  return err;
}

/** The write's result, or its unique or reference violation as uniqueFailure answers it. */
export async function mappingUniqueViolations<R>(entity: ResolvedEntity, write: Promise<R>): Promise<R> {
  try {
    return await write;
  } catch (err) {
    throw uniqueFailure(entity, err);
  }
}
