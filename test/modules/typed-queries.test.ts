import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../../framework/app.ts';

/**
 * Module code queries through kysely's typed builder, with table types declared by declaration
 * merging into framework/db/types.ts (docs/architecture.md, "Module code and SQL"). This scan
 * fails the build on SQL text in modules/: kysely's sql template and its raw helpers,
 * CompiledQuery.raw, executeQuery, a pool's or client's query(), or a pg client of its own.
 * The framework's prepared statements (framework/) are out of its reach on purpose.
 */
const RAW_SQL: readonly { name: string; pattern: RegExp }[] = [
  // sql`...` and sql<Row>`...`, the generic possibly nested or spread over lines.
  { name: 'sql template', pattern: /\bsql\s*(<(?:[^<>`]|<[^<>`]*>)*>)?\s*`/g },
  { name: 'sql helper', pattern: /\bsql\s*\.\s*(raw|lit|ref|id|table|join|val)\s*\(/g },
  { name: 'CompiledQuery.raw', pattern: /\bCompiledQuery\s*\.\s*raw\b/g },
  { name: 'executeQuery', pattern: /\bexecuteQuery\s*[(<]/g },
  { name: 'query()', pattern: /\.\s*query\s*(<(?:[^<>]|<[^<>]*>)*>)?\s*\(/g },
  { name: 'pg client', pattern: /\bfrom\s+['"]pg['"]/g },
];

interface RawSqlUse {
  file: string;
  line: number;
  kind: string;
  text: string;
}

/** Comments may talk about SQL; only code counts. `//` after a ':' (a URL) is not a comment. */
function withoutComments(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, (block) => block.replace(/[^\n]/g, ' '))
    .replace(/(^|[^:'"`])\/\/.*$/gm, (_line, before: string) => before);
}

function rawSqlUses(file: string, source: string): RawSqlUse[] {
  const code = withoutComments(source);
  const uses: RawSqlUse[] = [];
  for (const { name, pattern } of RAW_SQL) {
    for (const match of code.matchAll(pattern)) {
      const line = code.slice(0, match.index).split('\n').length;
      const text = source.split('\n')[line - 1]!.trim();
      uses.push({ file, line, kind: name, text });
    }
  }
  return uses;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.(ts|mts|js|mjs)$/.test(name) ? [path] : [];
  });
}

describe("module code queries through kysely's typed builder", () => {
  it('the scan finds every way of writing SQL text, and not builder calls or comments', () => {
    const bad = [
      'await sql`delete from sessions where id_hash = ${hash}`.execute(ctx.db);',
      'const { rows } = await sql<{ name: string }>`select name from roles`.execute(ctx.db);',
      'const { rows } = await sql<{\n  a: Array<string>;\n}>`select a from t`.execute(ctx.db);',
      "const COLUMNS = sql.raw('name, permissions');",
      "await tx.db.executeQuery(CompiledQuery.raw('delete from sessions where id_hash = $1', [h]));",
      "const { rows } = await services.db.pool.query<{ id: string }>('select id from tenants');",
      "await client.query('select 1')",
      "import pg from 'pg';",
    ];
    for (const source of bad) expect(rawSqlUses('modules/x/y.ts', source), source).not.toEqual([]);
    const fine = [
      "await ctx.db.selectFrom('roles').select('name').where('name', 'in', roles).execute();",
      "await ctx.db.deleteFrom('sessions').where('id_hash', '=', hash).execute();",
      '// before: await sql`delete from sessions`.execute(ctx.db)',
      "/* pool.query('select 1') was here */",
      "const link = 'https://example.test/a'; // pool.query('select 1') is gone",
      'const query = buildQuery(); const mysql = 1;',
    ];
    for (const source of fine) expect(rawSqlUses('modules/x/y.ts', source), source).toEqual([]);
  });

  it('finds no raw SQL anywhere in modules/', () => {
    const files = sources(join(ROOT, 'modules'));
    expect(files.length).toBeGreaterThan(20);
    const uses = files.flatMap((path) => rawSqlUses(relative(ROOT, path), readFileSync(path, 'utf8')));
    const offences = uses.map((use) => `${use.file}:${use.line} (${use.kind}): ${use.text}`);
    expect(offences, "query through ctx.db's typed builder (see docs/architecture.md)").toEqual([]);
  });
});
