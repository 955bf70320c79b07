import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/helpers/slow-first-sequencer.ts';
import { MEMORY, OWN_PROCESS, SLOW, SLOW_SHARED, unitTestFiles } from './test/helpers/test-kinds.ts';
import { startNodeOptions } from './scripts/start-options.ts';

// Three projects (test/helpers/test-kinds.ts says which file goes where): unit (no app, no
// database, no process), integration (the app on a database of its own), slow (browser, faults,
// the security suite, processes). `npx vitest run --project unit` runs the fast ones alone.
const UNIT = unitTestFiles(import.meta.dirname);
const ALL = 'test/**/*.test.ts';

// The file suite runs a second time on the S3 driver, against s3rver on loopback
// (test/modules/file/driver.ts); every other test runs once.
const FILE_SUITE = 'test/modules/file/**/*.test.ts';

// The memory files host the service in their worker, so the worker runs with the Node options an
// operator's `npm run start:web` starts it with (read from that script, the one place they are
// written: scripts/start-options.ts), not V8's own young generation (64 MiB semi-spaces on this
// machine, where the service has 16). list-export-memory and upload-memory assert that they run with them.
const SERVICE_NODE_OPTIONS = startNodeOptions('start:web');

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    // Two cores: a third worker runs while the other two wait on PostgreSQL, a child process or the browser.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // The slow files early, spread among the integration files; the unit files last (slow-first-sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    // With --coverage (npm run coverage, the first half of npm test): the framework's and the modules'
    // code. The slow project runs without (npm run test:slow): coverage made its files about 40 %
    // slower and the integration files about 60 % (docs/performance.md, "Run overheads").
    coverage: {
      provider: 'v8',
      include: ['framework/**/*.ts', 'modules/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      // The summary also when a test fails: vitest leaves it out by default, and a run on a loaded
      // machine that timed out a test then printed no coverage at all.
      reportOnFailure: true,
      // The floor: the clean-clone CI run of 2026-11-27 measured statements 90.18 %, branches 82.25 %,
      // functions 90.7 %, lines 92.19 %; one point below each, as paths taken by timing (retries,
      // fallbacks) vary between runs. Raise it as coverage grows.
      thresholds: { statements: 89, branches: 81, functions: 89, lines: 91 },
    },
    // The unit and integration files share their worker's process with the files before them
    // (`isolate: false`): the framework, the modules and their dependencies are imported once per
    // worker rather than once per file, which was a fifth of each file's time (docs/performance.md,
    // "Run overheads"). Those files leave no process-wide state behind; the few that must
    // (test-kinds.ts OWN_PROCESS) and every other project but `slow` keep a fresh process per file.
    projects: [
      {
        test: {
          name: 'unit',
          include: UNIT,
          isolate: false,
          // The type tests and what they import, not the whole repository again (npm run check does that):
          // the whole took 2.5 times as long to check.
          typecheck: { enabled: true, include: ['test/**/*.test-d.ts'], tsconfig: './test/types/tsconfig.json' },
        },
      },
      {
        test: {
          name: 'integration',
          include: [ALL],
          exclude: [...configDefaults.exclude, ...UNIT, ...SLOW, ...MEMORY, ...OWN_PROCESS],
          isolate: false,
        },
      },
      { test: { name: 'integration, own process', include: OWN_PROCESS } },
      // The browser tests and the security suite share their worker's process too (test-kinds.ts
      // SLOW_SHARED); the other slow files, which start processes and servers, get a fresh one each.
      { test: { name: 'slow', include: SLOW_SHARED, isolate: false } },
      {
        test: {
          name: 'slow, own process',
          include: SLOW,
          exclude: [...configDefaults.exclude, ...SLOW_SHARED],
        },
      },
      {
        test: {
          name: 'files on s3',
          include: [FILE_SUITE],
          exclude: [...configDefaults.exclude, ...MEMORY],
          env: { TEST_FILE_DRIVER: 's3' },
        },
      },
      // The memory measurements, once every other project is done (groupOrder), on both drivers.
      { test: { name: 'memory', include: MEMORY, execArgv: SERVICE_NODE_OPTIONS, sequence: { groupOrder: 1 } } },
      // The upload on s3 after them, alone: beside the export of a million rows (the two cores busy
      // with it and its PostgreSQL) it grew RSS by 69.1, 69.8 and 80.3 MiB in three runs, the JS
      // heap's old space by some 50 MiB of promoted SDK garbage. Alone it read 18-31 MiB in most runs
      // but 81.3 in one (docs/files.md, "Memory": not resolved). The local upload grows RSS by under
      // 10 MiB beside the others.
      {
        test: {
          name: 'memory on s3',
          // Only the file suite's: the others store no file.
          include: MEMORY.filter((file) => file.startsWith('test/modules/file/')),
          env: { TEST_FILE_DRIVER: 's3' },
          // start:web's options, as operators run it: 16 MiB semi-spaces. Under 8 MiB (tried for the
          // web role, then given up) this run read RSS +81.3 and +82.5 MiB in two CI-like runs, the
          // SDK's per-part garbage promoted to old space; under 16, +17.8 and +19.4 (docs/files.md, "Memory").
          execArgv: SERVICE_NODE_OPTIONS,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
