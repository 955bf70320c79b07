import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/**
 * Which vitest project a test file belongs to (vitest.config.ts):
 *
 * - slow: what starts another program or a browser, or attacks the whole installation: the browser
 *   tests, the faults, the security suite, the end-to-end tests with processes, and the few other
 *   files that start processes of their own (SLOW below, by name); the browser tests and the
 *   security suite in the project `slow` (SLOW_SHARED), the others in `slow, own process`;
 * - unit: a file that boots no app, opens no database and starts no process, it or any test file
 *   it imports (found here by reading them, so a new file lands where it belongs by itself);
 * - integration: everything else, the default (the app on a database of its own).
 *
 * `npx vitest run --project unit` runs the fast ones alone; `npm test` runs every project.
 */
export const SLOW = [
  'test/browser/**/*.test.ts',
  'test/e2e/**/*.test.ts',
  'test/faults/**/*.test.ts',
  'test/security/**/*.test.ts',
  // A copy of the repository and a vitest run inside it.
  'test/framework/new-module.test.ts',
  // `node main.ts` and `npm run start:web` in every role, and an embedded PostgreSQL started twice.
  'test/framework/process-roles.test.ts',
  // The type check of the whole repository.
  'test/framework/check-catches-type-errors.test.ts',
  // A PostgreSQL of its own and a streaming replica of it, two more servers.
  'test/framework/replica-reads.test.ts',
  // A scratch database's pool in a process of its own, whose idle connection the server ends.
  'test/framework/scratch-idle-connection.test.ts',
  // `npm run job` as a process against a running service.
  'test/modules/billing/job-command.test.ts',
  // 1,000,000 tasks seeded and vacuumed before it reads a plan (about two minutes on a loaded machine).
  'test/modules/task/task-list-plan.test.ts',
];

/**
 * The slow files that share their worker's process with the slow files before them (vitest.config.ts,
 * the project `slow`; the other slow files are `slow, own process`): the browser tests and the
 * security suite. Each of them starts an app and a browser or its world in its own hooks or at its
 * top level and closes them, and leaves no process-wide state behind (no spy on a global, no
 * `process.env`, no fake timers, no tracer); what the others do (child processes, servers of their
 * own, signals, the embedded PostgreSQL's library) is left to a fresh process each. Sharing the
 * process imports the framework, the modules and playwright once per worker instead of once per
 * file (docs/performance.md, "The slow project, shared process").
 */
export const SLOW_SHARED = ['test/browser/**/*.test.ts', 'test/security/**/*.test.ts'];

/**
 * Files that measure this process's memory: they run after every other file (vitest.config.ts, the
 * memory projects), the project `memory` with the Node options of `npm run start:web`. Beside
 * the slow files' browsers and child processes, a starved garbage collector let the 1 GiB upload's RSS grow 72 MiB in one
 * run, 21 MiB alone: what the test measures is the driver, not the machine's load. Beside the
 * export of a million rows it grew 69-80 MiB (old space +50 MiB of promoted garbage), so the upload
 * on s3 runs after the other memory files, alone; alone it still read 81 MiB once (docs/files.md,
 * "Memory": the promotion of the SDK's per-part garbage is not resolved).
 */
export const MEMORY = [
  'test/modules/file/upload-memory.test.ts',
  // `npm run start:web` as a child process, its idle RSS (the Node options of the role's start script).
  'test/framework/web-process-idle-memory.test.ts',
  // 1,000,000 rows seeded and exported as CSV to a client process (issue 48, point 2).
  'test/framework/list-export-memory.test.ts',
];

/**
 * Integration files that change what the whole process shares, which no other file may inherit:
 * they run as every file did before, each in a fresh process (vitest.config.ts, the project
 * `integration, own process`). Every other integration file shares its worker's imported framework
 * with the files before it (`isolate: false`), so it may not leave process-wide state behind:
 * OpenTelemetry's global tracer provider, propagator and context manager (both files below install
 * them), an unrestored spy on a global, `process.env`, fake timers. A file that counts what the
 * process has registered since it started runs here too.
 */
export const OWN_PROCESS = [
  'test/framework/tracing.test.ts',
  'test/framework/tracing-off-no-work.test.ts',
  // Counts the prepared statements of one connection against a bound: the statement texts are
  // registered process-wide (framework/db/statements.ts), and earlier files' widget writes, in a
  // shared process, had prepared a third update text (3 against the bound of 2).
  'test/framework/bounded-statements.test.ts',
];

/** What in a test file, or a test helper it imports, boots the app, opens a database or starts a process (Chromium among them). */
const NEEDS_MORE_THAN_UNIT =
  /\b(startTestApp|useTestApp|useBrowserApp|workerChromium|buildApp|buildWorld|createTestDatabase|createMigratedTestDatabase|openDatabase|startEmbeddedPostgres)\b|pgAdminUrl|from 'pg'|node:child_process|from 'supertest'/;

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+'(\.{1,2}\/[^']+)'/g;

/** The unit test files under root/test: none of them, nor the test files they import, needs more. */
export function unitTestFiles(root: string): string[] {
  const testDir = join(root, 'test');
  const verdicts = new Map<string, boolean>();
  const needsMore = (file: string, seen: Set<string>): boolean => {
    const known = verdicts.get(file);
    if (known !== undefined) return known;
    if (seen.has(file)) return false;
    seen.add(file);
    const source = readFileSync(file, 'utf8');
    let verdict = NEEDS_MORE_THAN_UNIT.test(source);
    for (const [, spec] of source.matchAll(IMPORT)) {
      if (verdict) break;
      const target = resolve(dirname(file), spec!);
      // Only the test tree's own helpers decide; framework and module code is what is under test.
      if (target.startsWith(`${testDir}/`) && target.endsWith('.ts') && existsSync(target))
        verdict = needsMore(target, seen);
    }
    verdicts.set(file, verdict);
    return verdict;
  };
  return testFiles(testDir)
    .filter((file) => !needsMore(file, new Set()))
    .map((file) => relative(root, file))
    .sort();
}

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' || entry.name === 'node_modules' ? [] : testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}
