import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { PROBLEMS } from '../../framework/errors.ts';

/**
 * docs/api-conventions.md's table of the framework's codes is where an API consumer looks a code
 * up: every code the framework declares (framework/errors.ts) has a row there, under its status.
 * Modules' own codes are documented with their module.
 */
const conventions = readFileSync(new URL('../../docs/api-conventions.md', import.meta.url), 'utf8');

/** Each code of the table, with the statuses of the rows naming it. */
function documentedCodes(): Map<string, Set<number>> {
  const codes = new Map<string, Set<number>>();
  for (const line of conventions.split('\n')) {
    const row = /^\| (\d{3}) \| ([^|]+) \|/.exec(line);
    if (!row) continue;
    for (const [, code] of row[2]!.matchAll(/`([A-Za-z_]+)`/g)) {
      const statuses = codes.get(code!) ?? new Set<number>();
      statuses.add(Number(row[1]));
      codes.set(code!, statuses);
    }
  }
  return codes;
}

describe("docs/api-conventions.md's table of codes", () => {
  it('has a row for every code the framework declares, under the status it answers', () => {
    const documented = documentedCodes();
    const missing = Object.entries(PROBLEMS)
      .filter(([code, declared]) => !documented.get(code)?.has(declared.status))
      .map(([code, declared]) => `${declared.status} ${code}`);
    expect(missing).toEqual([]);
  });
});
