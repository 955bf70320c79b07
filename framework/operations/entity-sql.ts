import { CompiledQuery, type Transaction } from 'kysely';
import type { Database } from '../db/types.ts';

/** SQL pieces the generic operations share: identifiers, conditions, values, running a text. */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID.test(value);

export const quote = (identifier: string): string => `"${identifier.replaceAll('"', '""')}"`;

/** ` where a and b`, leaving out empty conditions (and the where, when none is left). */
export const where = (...conditions: string[]): string => {
  const kept = conditions.filter((c) => c !== '');
  return kept.length > 0 ? ` where ${kept.join(' and ')}` : '';
};

/**
 * Runs a text in the transaction: by name when it was registered as prepared (the texts assembled
 * from the entity's declaration, `prepared`; the bounded write shapes, StatementShapes), else unnamed.
 */
export async function run<R>(db: Transaction<Database>, text: string, params: unknown[]): Promise<R[]> {
  return (await db.executeQuery<R>(CompiledQuery.raw(text, params))).rows;
}

export function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Date) return b !== null && b !== undefined && new Date(b as string).getTime() === a.getTime();
  if (typeof a === 'object' || typeof b === 'object') return JSON.stringify(a) === JSON.stringify(b);
  return a === b;
}
