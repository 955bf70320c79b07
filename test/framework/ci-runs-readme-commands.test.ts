import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * CI runs what the README tells a developer to run (its "Test" section), nothing else and nothing
 * less, and those commands run every vitest project: no test file is left out of CI.
 */
const ROOT = join(import.meta.dirname, '../..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The commands of the README's first shell block under "## Test", comments left out. */
function readmeTestCommands(): string[] {
  const section =
    read('README.md')
      .split(/^## Test$/m)[1]
      ?.split(/^## /m)[0] ?? '';
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return commands(block);
}

/** The npm commands .ci/run runs after its clean install. */
function ciCommands(): string[] {
  return commands(read('.ci/run')).filter((line) => /^npm /.test(line) && line !== 'npm ci');
}

const commands = (text: string) =>
  text
    .split('\n')
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter((line) => line !== '');

/**
 * The vitest projects a command runs (every one when it names none), or none when it runs no vitest;
 * a script of several commands (`npm run a && npm run b`) runs what each of them runs.
 */
function projectsRun(command: string, all: string[]): string[] {
  const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  const script = /^npm (?:run )?(test|[\w:-]+)$/.exec(command)?.[1];
  const line = script ? (scripts[script] ?? '') : command;
  const parts = line.split('&&').map((part) => part.trim());
  if (parts.length > 1) return parts.flatMap((part) => projectsRun(part, all));
  if (!/\bvitest run\b/.test(line)) return [];
  const named = [...line.matchAll(/--project\s+(?:'([^']*)'|"([^"]*)"|(\S+))/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
  return named.length > 0 ? named : all;
}

describe('CI and the README', () => {
  it('.ci/run runs exactly the README’s test commands, in its order', () => {
    const readme = readmeTestCommands();
    expect(readme.length).toBeGreaterThan(0);
    expect(ciCommands()).toEqual(readme);
  });

  it('those commands run every vitest project, the check first', () => {
    const projects = [...read('vitest.config.ts').matchAll(/\bname:\s*'([^']+)'/g)].map((m) => m[1]!);
    expect(projects).toEqual(expect.arrayContaining(['unit', 'integration', 'slow']));
    const ci = ciCommands();
    expect(ci[0]).toBe('npm run check');
    const covered = new Set(ci.flatMap((command) => projectsRun(command, projects)));
    expect([...covered].sort()).toEqual([...projects].sort());
  });
});
