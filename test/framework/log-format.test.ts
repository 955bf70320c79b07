import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { effectiveLogFormat } from '../../framework/observability/log-output.ts';
import { testConfig } from '../helpers/config.ts';

const ROOT = resolve(import.meta.dirname, '../..');

describe('server.log_format', () => {
  it('empty: pretty on a terminal, JSON otherwise; json and pretty as said', () => {
    expect(effectiveLogFormat('', true)).toBe('pretty');
    expect(effectiveLogFormat('', false)).toBe('json');
    expect(effectiveLogFormat('json', true)).toBe('json');
    expect(effectiveLogFormat('pretty', false)).toBe('pretty');
    expect(testConfig().server.log_format).toBe('');
    expect(testConfig({ server: { log_format: 'pretty' } }).server.log_format).toBe('pretty');
    expect(() => testConfig({}, { TENANTRY_SERVER_LOG_FORMAT: 'xml' })).toThrow(/server\.log_format must be one of/);
  });

  it('json writes one JSON object per line; pretty writes one readable line per entry', () => {
    const script = `
      const { processLogger } = await import('./framework/observability/log-output.ts');
      const log = processLogger('info', process.argv[1]);
      log.info({ migrations: 3, owners: 'framework 8, auth 4' }, 'migrations applied');`;
    const run = (format: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', script, format], { cwd: ROOT, encoding: 'utf8' });
    const json = run('json');
    expect(json.status).toBe(0);
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ level: 30, migrations: 3, msg: 'migrations applied' });

    const pretty = run('pretty');
    expect(pretty.status).toBe(0);
    const lines = pretty.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: migrations applied \{"migrations":3,"owners":"framework 8, auth 4"\}$/,
    );
  });
});
