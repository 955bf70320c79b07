import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';

const run = promisify(execFile);
let app: TestApp;
let dir: string;

beforeAll(async () => {
  // The installation's modules only: the document a consumer gets.
  app = await startTestApp({ modules: allModules });
  dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the served OpenAPI document under Redocly's recommended rules", () => {
  it('has 0 errors and 0 warnings', async () => {
    const file = join(dir, 'openapi.json');
    writeFileSync(file, JSON.stringify((await app.http().get('/api/v1/openapi.json')).body));
    // The CLI's recommended ruleset (no redocly.yaml: nothing is switched off); JSON output to count.
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
    const { stdout } = await run('node_modules/.bin/redocly', ['lint', file, '--format', 'json'], {
      maxBuffer: 64 * 1024 * 1024,
      env,
    }).catch((err: { stdout: string }) => err);
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string }[];
    };
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  });
});
