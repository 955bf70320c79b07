import { writeFileSync } from 'node:fs';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * A vitest reporter for where a run's time goes, file by file. Vitest's JSON report times a file
 * from its first test's start to its last test's end, which leaves out importing the file and its
 * beforeAll (for most files here, booting the app): this one adds them (vitest's documented
 * ModuleDiagnostic), and records when each file was queued and ended on the run's clock, so idle
 * workers and a slow file started last show.
 *
 *   npx vitest run --reporter=default --reporter=./test/helpers/file-timings-reporter.ts
 *
 * It prints the 20 costliest files at the end, and writes every file's figures to the path in
 * TEST_TIMINGS_OUT when it is set (JSON).
 */
interface FileTiming {
  file: string;
  project: string;
  /** Import of the file and everything it imports, setup files, environment: before the first hook. */
  importMs: number;
  /** Hooks and tests. */
  runMs: number;
  totalMs: number;
  /** Since the run started: when the file's worker began it, and when it ended. */
  startedAtMs: number;
  endedAtMs: number;
  state: string;
}

export default class FileTimingsReporter implements Reporter {
  private runStart = 0;
  private readonly started = new Map<string, number>();
  private readonly files: FileTiming[] = [];

  onTestRunStart(): void {
    this.runStart = performance.now();
  }

  onTestModuleCollected(module: TestModule): void {
    // Collected means imported: the import began importMs before now.
    const d = module.diagnostic();
    const importMs = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration;
    this.started.set(key(module), performance.now() - this.runStart - importMs);
  }

  onTestModuleEnd(module: TestModule): void {
    const d = module.diagnostic();
    const importMs = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration;
    const endedAtMs = performance.now() - this.runStart;
    this.files.push({
      file: module.relativeModuleId,
      project: module.project.name,
      importMs: Math.round(importMs),
      runMs: Math.round(d.duration),
      totalMs: Math.round(importMs + d.duration),
      startedAtMs: Math.round(this.started.get(key(module)) ?? endedAtMs - importMs - d.duration),
      endedAtMs: Math.round(endedAtMs),
      state: module.state(),
    });
  }

  onTestRunEnd(): void {
    const files = [...this.files].sort((a, b) => b.totalMs - a.totalMs);
    const wallMs = performance.now() - this.runStart;
    const sumMs = files.reduce((sum, f) => sum + f.totalMs, 0);
    const lines = [
      '',
      `File timings: ${files.length} files, ${seconds(sumMs)} summed (import + hooks + tests), ${seconds(wallMs)} wall`,
      '  total   import  start→end  file',
      ...files
        .slice(0, 20)
        .map(
          (f) =>
            `  ${seconds(f.totalMs).padStart(6)}  ${seconds(f.importMs).padStart(6)}  ${seconds(f.startedAtMs).padStart(6)}→${seconds(f.endedAtMs).padEnd(6)}  ${f.file} [${f.project}]`,
        ),
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    const out = process.env.TEST_TIMINGS_OUT;
    if (out) writeFileSync(out, `${JSON.stringify({ wallMs: Math.round(wallMs), sumMs, files }, null, 2)}\n`);
  }
}

const key = (module: TestModule) => `${module.project.name}\u0000${module.moduleId}`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}s`;
