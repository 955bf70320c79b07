import { describe, expect, inject, it } from 'vitest';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from '../../framework/app.ts';

const run = promisify(execFile);

/**
 * `npm run migration:new` generates on a scratch database (framework/schema/scratch.ts). When the
 * server ends one of its pool's idle connections (57P01, terminating connection due to
 * administrator command), the pool says so in one line on stderr and opens another connection for
 * the next query: the command does not die on an uncaught 'error' event. The scratch database runs
 * in a process of its own (test/fixtures/scratch/idle-connection-ended.ts), so a crash is its exit
 * status, not this run's.
 */
describe('the scratch database of npm run migration:new', () => {
  it('carries on when the server ends an idle connection of its pool (57P01), saying so on stderr', {
    timeout: 60_000,
  }, async () => {
    const done = await run(
      process.execPath,
      [join(ROOT, 'test/fixtures/scratch/idle-connection-ended.ts'), inject('pgAdminUrl')],
      { cwd: ROOT },
    ).catch((err: { code: number; stdout: string; stderr: string }) => err);
    const output = `${done.stdout}\n${done.stderr}`;
    expect('code' in done ? done.code : 0, output).toBe(0);
    expect(done.stdout).toContain('connections after the end: 0');
    expect(done.stdout).toContain('a query after it answered 1');
    expect(done.stderr).toBe(
      'scratch database: the server closed an idle connection (terminating connection due to administrator command); another is opened when needed\n',
    );
  });
});
