import type { ResolvedEntity } from '../entity/resolve.ts';
import { problem } from '../errors.ts';

/**
 * A write refused by a unique index the entity names in uniqueCodes answers that code (e.g.
 * SLUG_TAKEN) instead of the generic ALREADY_EXISTS; the transaction is rolled back either way.
 * Any other error is returned as it is.
 */
export function uniqueFailure(entity: ResolvedEntity, err: unknown): unknown {
  const { code, constraint } = err as { code?: string; constraint?: string };
  if (code === '23505') {
    for (const [field, rule] of Object.entries(entity.def.uniqueCodes ?? {})) {
      if (rule && rule.index === constraint) {
        return problem(rule.code, `${field} is already used by another ${entity.names.label.toLowerCase()}`, {
          extensions: { field },
        });
      }
    }
  }
  return err;
}

/** The write's result, or its unique violation as uniqueFailure answers it. */
export async function mappingUniqueViolations<R>(entity: ResolvedEntity, write: Promise<R>): Promise<R> {
  try {
    return await write;
  } catch (err) {
    throw uniqueFailure(entity, err);
  }
}
