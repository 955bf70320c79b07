import type pg from 'pg';
import { INDEXES, loadTables, type IndexRow } from '../entity/table-check.ts';
import type { ActualCheck, ActualColumn, ActualForeignKey, ActualIndex, ActualTable } from './model.ts';

// Checks and foreign keys (not-null constraints, which PostgreSQL 18 also lists, are columns' business).
const CONSTRAINTS = `
select t.relname as table_name, c.conname as name, c.contype as kind,
       pg_get_constraintdef(c.oid, true) as definition,
       array(select a.attname::text from unnest(c.conkey) with ordinality k(attnum, n)
               join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum order by k.n) as columns,
       r.relname as ref_table,
       array(select a.attname::text from unnest(c.confkey) with ordinality k(attnum, n)
               join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum order by k.n) as ref_columns
  from pg_constraint c
  join pg_class t on t.oid = c.conrelid
  join pg_namespace n on n.oid = t.relnamespace and n.nspname = current_schema()
  left join pg_class r on r.oid = c.confrelid
 where c.contype in ('c', 'f') and t.relname = any ($1::text[])
 order by t.relname, c.conname`;

interface ConstraintRow {
  table_name: string;
  name: string;
  kind: 'c' | 'f';
  definition: string;
  columns: string[];
  ref_table: string | null;
  ref_columns: string[];
}

/** A default that is a constant (a literal with a cast), which can be evaluated to compare with a definition's. */
const isConstant = (expr: string) => !/[a-z_]\w*\s*\(/i.test(expr);

/** The constant defaults of a table's columns, evaluated by PostgreSQL: column → value. */
async function constantDefaults(
  pool: pg.Pool,
  columns: ReadonlyMap<string, { defaultExpr: string | null }>,
): Promise<Map<string, unknown>> {
  const constant = [...columns].filter(([, c]) => c.defaultExpr !== null && isConstant(c.defaultExpr));
  if (constant.length === 0) return new Map();
  const select = constant.map(([, c], i) => `${c.defaultExpr} as c${i}`).join(', ');
  const { rows } = await pool.query<Record<string, unknown>>(`select ${select}`);
  return new Map(constant.map(([name], i) => [name, rows[0]![`c${i}`]]));
}

/**
 * The tables as the catalog has them: columns (with their constant defaults evaluated), indexes by
 * their keys and predicates, checks, foreign keys, row-level security and triggers. Tables that
 * do not exist are left out of the map.
 */
export async function loadActualTables(pool: pg.Pool, names: readonly string[]): Promise<Map<string, ActualTable>> {
  const base = await loadTables(pool, names);
  const [constraints, indexes] = await Promise.all([
    pool.query<ConstraintRow>(CONSTRAINTS, [[...names]]),
    pool.query<IndexRow>(INDEXES, [[...names]]),
  ]);
  const result = new Map<string, ActualTable>();
  for (const [name, table] of base) {
    const defaults = await constantDefaults(pool, table.columns);
    const columns = new Map<string, ActualColumn>();
    for (const [column, info] of table.columns) {
      columns.set(column, {
        type: info.type,
        notNull: info.notNull,
        defaultExpr: info.defaultExpr,
        ...(defaults.has(column) ? { defaultValue: { value: defaults.get(column) } } : {}),
      });
    }
    const own = constraints.rows.filter((c) => c.table_name === name);
    const checks: ActualCheck[] = own
      .filter((c) => c.kind === 'c')
      .map((c) => ({ name: c.name, columns: c.columns, definition: c.definition }));
    const foreignKeys: ActualForeignKey[] = own
      .filter((c) => c.kind === 'f')
      .map((c) => ({ name: c.name, columns: c.columns, table: c.ref_table ?? '', refColumns: c.ref_columns }));
    const tableIndexes: ActualIndex[] = indexes.rows
      .filter((i) => i.table_name === name)
      .map((i) => ({
        name: i.name,
        unique: i.unique,
        keys: i.keys,
        where: i.predicate,
        ...(i.primary ? { primary: true } : {}),
      }));
    result.set(name, {
      name,
      columns,
      indexes: tableIndexes,
      checks,
      foreignKeys,
      rowSecurity: table.rowSecurity,
      policies: table.policies,
      triggerFunctions: table.triggerFunctions,
    });
  }
  return result;
}

/** Every relation name in the schema (tables, indexes, sequences), so a new index never takes one in use. */
export async function loadRelationNames(pool: pg.Pool): Promise<Set<string>> {
  const { rows } = await pool.query<{ name: string }>(
    `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace and n.nspname = current_schema()`,
  );
  return new Set(rows.map((r) => r.name));
}
