import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, migrationSources } from '../../framework/app.ts';
import { allModules } from '../../modules/index.ts';
import { createMigratedTestDatabase } from '../helpers/database.ts';

/**
 * Issue 45 bounds a web process's RSS at 300 MiB with 2,000 streams open under 200 creates/s, and
 * those cost it 70-100 MiB (docs/performance.md, "Live streams"): what it holds before any stream
 * must leave that room. With V8's default young generation it idled at 314-346 MiB (its new space
 * grown to 128 MiB during boot, mostly garbage); with a 16 MiB one at 211-220; started as `npm run
 * start:web` starts it (16 MiB, docs/operations.md), and loading neither the job queue, nor the S3
 * SDK, nor the SMTP transport it has no use for (web-process-loads.test.ts), at 194.8-195.4 (three
 * runs, quiet machine, 2026-11-28).
 */
const IDLE_BOUND_MIB = 220;
/** How long after `tenantry started` the process's RSS is sampled, at its highest. */
const IDLE_SAMPLE_MS = 5_000;

const dir = mkdtempSync(join(tmpdir(), 'tenantry-web-idle-'));
let child: ChildProcessWithoutNullStreams | undefined;
let servicePid: number | undefined;

afterAll(() => {
  child?.kill('SIGKILL');
  if (servicePid !== undefined) {
    try {
      // Under npm the service is a grandchild: a failed test must not leave it behind.
      process.kill(servicePid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line!.split(/\s+/)[1]) / 1024;
}

/** Resolves with the service's `tenantry started` log line (its pid and role) once npm's child logs it. */
function started(process: ChildProcessWithoutNullStreams): Promise<{ pid: number; role: string }> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    process.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    process.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg: string; pid: number; role: string };
        if (entry.msg === 'tenantry started') resolve(entry);
      }
    });
    process.once('exit', (code) => reject(new Error(`npm run start:web exited ${code}: ${stderr}`)));
  });
}

describe('web process memory', () => {
  it(`a web process started by \`npm run start:web\` idles under ${IDLE_BOUND_MIB} MiB of RSS`, async () => {
    const databaseUrl = await createMigratedTestDatabase(migrationSources(allModules));
    const config = join(dir, 'web.yaml');
    writeFileSync(
      config,
      `server:\n  host: 127.0.0.1\n  port: 0\n  public_host: ops.localhost\n  log_format: json\ndatabase:\n  url: "${databaseUrl}"\n  pool_size: 3\n`,
    );
    // The operator's command itself, so the test measures the Node options package.json gives the role.
    child = spawn('npm', ['run', '--silent', 'start:web', '--', '--config', config], {
      cwd: ROOT,
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TENANTRY_'))),
    });
    const line = await started(child);
    servicePid = line.pid;
    expect(line.role).toBe('web');

    let peak = 0;
    for (const end = Date.now() + IDLE_SAMPLE_MS; Date.now() < end; ) {
      peak = Math.max(peak, rssMiB(servicePid));
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(peak, `the web process's peak RSS, idle: ${peak.toFixed(1)} MiB`).toBeLessThan(IDLE_BOUND_MIB);
  }, 60_000);
});
