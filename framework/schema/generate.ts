import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type pg from 'pg';
import type { AnyEntity } from '../entity/define.ts';
import { loadActualTables, loadRelationNames } from './actual.ts';
import { desiredTable } from './desired.ts';
import { diffTables, type Change } from './diff.ts';
import type { TableSpec } from './model.ts';
import { leftOut, notGenerated, renderMigration } from './render.ts';

export interface Generated {
  /** The migration's text; undefined when the tables already are what the definitions call for. */
  sql: string | undefined;
  changes: Change[];
  /** Destructive changes not written (no --allow-destructive), one line each. */
  leftOut: string[];
  /** Changes a person must write (a change of scope), one line each. */
  notGenerated: string[];
}

/**
 * The migration that brings the tables of a database (already migrated with the existing
 * migrations) to what the entities' definitions call for.
 */
export async function generateMigration(
  pool: pg.Pool,
  entities: readonly AnyEntity[],
  options: {
    allowDestructive: boolean;
    command: string;
    /** Every entity of the installation, where references find their targets: the given ones unless said. */
    installed?: readonly AnyEntity[];
  },
): Promise<Generated> {
  const installed = [...(options.installed ?? []), ...entities.filter((e) => !options.installed?.includes(e))];
  const specs = targetsFirst(entities.map((entity) => desiredTable(entity, installed)));
  const actual = await loadActualTables(pool, [
    ...new Set([...specs.map((s) => s.table), ...specs.flatMap((s) => s.foreignKeys.map((k) => k.table))]),
  ]);
  const changes = diffTables(specs, actual, await loadRelationNames(pool));
  return {
    sql: renderMigration(changes, options),
    changes,
    leftOut: leftOut(changes, options.allowDestructive),
    notGenerated: notGenerated(changes),
  };
}

/** The tables in an order where a table another names by a foreign key comes before it (else as given). */
function targetsFirst(specs: readonly TableSpec[]): TableSpec[] {
  const ordered: TableSpec[] = [];
  const visiting = new Set<TableSpec>();
  const visit = (spec: TableSpec) => {
    if (ordered.includes(spec) || visiting.has(spec)) return;
    visiting.add(spec);
    for (const key of spec.foreignKeys) {
      const target = specs.find((s) => s.table === key.table);
      if (target && target !== spec) visit(target);
    }
    ordered.push(spec);
  };
  for (const spec of specs) visit(spec);
  return ordered;
}

/** A migration's name part: lower-case words joined by underscores. */
export function migrationSlug(name: string): string {
  const slug = name
    .trim()
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (!slug) throw new Error(`a migration needs a name of letters or digits (got ${JSON.stringify(name)})`);
  return slug;
}

/** The next file of a migrations directory: NNNN_<name>.sql, one past the highest number there. */
export function nextMigrationFile(dir: string, name: string): string {
  const numbers = existsSync(dir)
    ? readdirSync(dir)
        .map((f) => /^(\d+)_.*\.sql$/.exec(f)?.[1])
        .filter((n): n is string => n !== undefined)
        .map(Number)
    : [];
  const next = (numbers.length ? Math.max(...numbers) : 0) + 1;
  return `${String(next).padStart(4, '0')}_${migrationSlug(name)}.sql`;
}

/** Writes the migration into the directory under its next number; returns the file's path. */
export function writeMigration(dir: string, name: string, sql: string): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, nextMigrationFile(dir, name));
  writeFileSync(path, sql, { flag: 'wx' });
  return path;
}
