import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { npmRun } from '../e2e/processes.ts';
import { freePort } from '../helpers/ports.ts';
import { NoDatabaseError, unopenedDatabase } from '../../framework/db/pool.ts';
import { SNAPSHOT_FILE } from '../../scripts/openapi/compatibility.ts';

/**
 * `npm run check` needs no database: the OpenAPI document it lints and checks the typed client
 * against is derived from the declarations alone, so exporting it opens no PostgreSQL, embedded or
 * not, and works beside a running service (whose embedded server holds data/postgres).
 */

let dir: string;
let nothingListens: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tenantry-openapi-export-'));
  // A database URL on this machine where no server answers: a connection attempt would fail.
  nothingListens = `postgres://postgres:postgres@127.0.0.1:${await freePort()}/tenantry`;
});
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('npm run openapi:export without a database', () => {
  it('writes the accepted document with database.url naming a server that is not there', async () => {
    const out = join(dir, 'with-url.json');
    const run = await npmRun('openapi:export', ['--out', out], { TENANTRY_DATABASE_URL: nothingListens }, 120_000);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(SNAPSHOT_FILE, 'utf8'));
  }, 150_000);

  it('starts no embedded PostgreSQL: its data directory is never made', async () => {
    const out = join(dir, 'embedded.json');
    const embeddedDir = join(dir, 'never', 'postgres');
    const run = await npmRun(
      'openapi:export',
      ['--out', out],
      { TENANTRY_DATABASE_EMBEDDED_DIR: embeddedDir, TENANTRY_DATABASE_EMBEDDED_PORT: String(await freePort()) },
      120_000,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(SNAPSHOT_FILE, 'utf8'));
    expect(existsSync(join(dir, 'never'))).toBe(false);
  }, 150_000);

  it('npm run client:check (a part of npm run check) passes the same way', async () => {
    const run = await npmRun('client:check', [], { TENANTRY_DATABASE_URL: nothingListens }, 120_000);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('client/schema.d.ts is current.');
  }, 150_000);
});

describe('the database the document is built over', () => {
  it('refuses every query at once, so a build step that queried would fail, not pass on a running database', async () => {
    const db = unopenedDatabase();
    try {
      await expect(db.pool.query('select 1')).rejects.toBeInstanceOf(NoDatabaseError);
      await expect(db.pool.connect()).rejects.toBeInstanceOf(NoDatabaseError);
      await expect(db.kysely.selectNoFrom((eb) => eb.lit(1).as('one')).execute()).rejects.toBeInstanceOf(
        NoDatabaseError,
      );
    } finally {
      await db.close();
    }
  });
});
