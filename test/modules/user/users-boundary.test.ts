import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT } from '../../../framework/app.ts';

/**
 * One owner per table: the user module owns users. Every other module, and the framework, writes
 * users only through modules/user/users-service.ts; this scan fails the build when SQL text or a
 * query builder call anywhere else writes the table.
 */
const WRITES_USERS: readonly RegExp[] = [
  // SQL text, in template literals or plain strings, across line breaks.
  /\b(update|insert\s+into|delete\s+from|merge\s+into|truncate(\s+table)?)\s+(only\s+)?("?public"?\.)?"?users"?(?![\w.])/i,
  // kysely's builder, with or without an alias.
  /\b(insertInto|updateTable|deleteFrom|mergeInto|replaceInto)\(\s*['"`]users(\s+as\s+\w+)?['"`]/,
];

function writesUsers(source: string): boolean {
  return WRITES_USERS.some((pattern) => pattern.test(source));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs|sql)$/.test(entry.name) ? [path] : [];
  });
}

describe('module boundaries: only the user module writes users', () => {
  it('the scan recognises every way of writing the table', () => {
    for (const bad of [
      'await sql`update users set password_hash = ${hash} where id = ${id}`',
      "CompiledQuery.raw('UPDATE  users SET status = $1', [s])",
      'sql`\n  insert into users (email) values (${e})`',
      "'delete from public.users where id = $1'",
      'update "users" set roles = $1',
      "ctx.db.updateTable('users').set({ status: 'active' })",
      'ctx.db.insertInto("users").values(v)',
      "ctx.db.deleteFrom('users as u')",
    ]) {
      expect(writesUsers(bad), bad).toBe(true);
    }
    for (const fine of [
      'select id, status from users where id = $1',
      "ctx.db.selectFrom('users')",
      'update users_archive set x = 1',
      'update sessions set last_seen_at = now()',
      "insertInto('user_settings')",
    ]) {
      expect(writesUsers(fine), fine).toBe(false);
    }
  });

  it('no file of another module or of the framework writes users by SQL', () => {
    const userModule = join(ROOT, 'modules', 'user');
    const files = [...sourceFiles(join(ROOT, 'modules')), ...sourceFiles(join(ROOT, 'framework'))].filter(
      (f) => !f.startsWith(`${userModule}/`),
    );
    expect(files.length).toBeGreaterThan(20);
    const offenders = files.filter((f) => writesUsers(readFileSync(f, 'utf8'))).map((f) => relative(ROOT, f));
    expect(offenders, 'write users through modules/user/users-service.ts').toEqual([]);
  });
});
