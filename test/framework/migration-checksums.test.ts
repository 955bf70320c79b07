import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { allModules } from '../../modules/index.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';
import { startTestApp } from '../helpers/app.ts';
import { migrationSources } from '../../framework/app.ts';
import { migrationChecksum, runMigrations, type MigrationSource } from '../../framework/db/migrate.ts';

/**
 * migration_history records each file's SHA-256; a start with an applied file changed or missing
 * refuses with one line naming it, unless database.allow_changed_migrations (development).
 */
let root: string;
let sources: MigrationSource[];
const taskDir = () => sources.find((s) => s.owner === 'task')!.dir;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'tenantry-checksums-'));
  // The installation's migrations, the task module's in a directory of the test's own.
  sources = migrationSources(allModules).map((source) => {
    if (source.owner !== 'task') return source;
    const dir = join(root, 'task');
    cpSync(source.dir, dir, { recursive: true });
    return { ...source, dir };
  });
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

const history = async (pool: pg.Pool) =>
  (
    await pool.query<{ owner: string; name: string; checksum: string | null }>(
      `select owner, name, checksum from migration_history where owner = 'task' order by name`,
    )
  ).rows;

describe('migration checksums', () => {
  it('records each applied file’s SHA-256', async () => {
    const pool = new pg.Pool({ connectionString: await createTestDatabase('sums'), max: 2 });
    try {
      await runMigrations(pool, sources);
      const rows = await history(pool);
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows)
        expect(row.checksum, row.name).toBe(migrationChecksum(readFileSync(join(taskDir(), row.name))));
      const { rows: unrecorded } = await pool.query('select owner, name from migration_history where checksum is null');
      expect(unrecorded).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it('gives the rows of a database from before checksums theirs on the next start', async () => {
    const pool = new pg.Pool({ connectionString: await createTestDatabase('sums_old'), max: 2 });
    try {
      await runMigrations(pool, sources);
      // As a database migrated before framework/0015: no column, no checksums.
      await pool.query(`alter table migration_history drop column checksum`);
      await pool.query(
        `delete from migration_history where owner = 'framework' and name = '0015_migration_checksums.sql'`,
      );
      expect(await runMigrations(pool, sources)).toEqual([
        { owner: 'framework', name: '0015_migration_checksums.sql' },
      ]);
      const { rows } = await pool.query('select owner, name from migration_history where checksum is null');
      expect(rows).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it('refuses a start with an applied file changed, or missing, in one line naming it', {
    timeout: 60_000,
  }, async () => {
    const databaseUrl = await createTestDatabase('sums_changed');
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    const file = join(taskDir(), '0001_tasks.sql');
    const original = readFileSync(file);
    try {
      await runMigrations(pool, sources);
      appendFileSync(file, '\n-- edited after it was applied\n');
      const changed = await runMigrations(pool, sources).then(
        () => '',
        (err: Error) => `${err.name}: ${err.message}`,
      );
      expect(changed).toBe(
        'MigrationError: migration task/0001_tasks.sql changed after it was applied (its SHA-256 is not the one recorded): restore it and write the change as a new migration, or set database.allow_changed_migrations in development',
      );

      // Allowed in development: the start goes on and records the file as it is now.
      await runMigrations(pool, sources, { allowChanged: true });
      expect((await history(pool)).find((r) => r.name === '0001_tasks.sql')!.checksum).toBe(
        migrationChecksum(readFileSync(file)),
      );
      await runMigrations(pool, sources);

      renameSync(file, `${file}.gone`);
      const missing = await runMigrations(pool, sources).then(
        () => '',
        (err: Error) => err.message,
      );
      expect(missing).toBe(
        'migration task/0001_tasks.sql is applied but its file is missing: restore it (an applied migration is never removed; undo it with a new one)',
      );
      renameSync(`${file}.gone`, file);
    } finally {
      writeFileSync(file, original);
      await pool.end();
    }
  });

  it('stops the service’s start, and database.allow_changed_migrations lets it go on', {
    timeout: 60_000,
  }, async () => {
    const databaseUrl = await createTestDatabase('sums_start');
    const modules = allModules.map((m) => (m.name === 'task' ? { ...m, migrations: taskDir() } : m));
    const file = join(taskDir(), '0002_tasks_without_tenant_key.sql');
    const first = await startTestApp({ modules, databaseUrl });
    await first.close();
    appendFileSync(file, '\n-- edited after it was applied\n');
    const refused = await startTestApp({ modules, databaseUrl }).then(
      async (app) => {
        await app.close();
        return '';
      },
      (err: Error) => err.message,
    );
    expect(refused).toMatch(/^migration task\/0002_tasks_without_tenant_key\.sql changed after it was applied/);
    const allowed = await startTestApp({
      modules,
      databaseUrl,
      config: testConfig({ database: { allow_changed_migrations: true } }),
    });
    await allowed.close();
  });
});
