import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp, migrationSources } from '../../framework/app.ts';
import { MIGRATION_LOCK_KEY, runMigrations, transactionControl } from '../../framework/db/migrate.ts';
import { defineModule } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { createMigratedTestDatabase, createTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';

const pools: pg.Pool[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function migrationDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-refusals-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

function poolFor(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pools.push(pool);
  return pool;
}

async function start(modules: ReturnType<typeof defineModule>[]): Promise<string> {
  const all = [...allModules, ...modules];
  const databaseUrl = await createMigratedTestDatabase(migrationSources(all));
  return buildApp({ config: testConfig(), modules: all, databaseUrl, role: 'web', startWorker: false }).then(
    async (app) => {
      await app.close();
      return '';
    },
    (err: Error) => `${err.name}: ${err.message}`,
  );
}

describe('migration refusals', () => {
  it('refuses a start when a module table carrying tenant_id is not isolated by row-level security', async () => {
    const dir = migrationDir({
      '0001_notes.sql': `create table loose_notes (
        tenant_id uuid not null default app_tenant_id(), id uuid not null, body text, primary key (tenant_id, id));`,
    });
    const refused = await start([defineModule({ name: 'loose', migrations: dir })]);
    expect(refused).toBe(
      "BootCheckError: startup checks failed: definitions and tables disagree:\n- table loose_notes carries tenant_id but is not isolated by tenant (row-level security enabled, with a policy); call make_tenant_table('loose_notes') in its migration",
    );
  });

  it('refuses a module named framework: its migrations would be taken for the framework’s', async () => {
    const dir = migrationDir({
      '0001_core.sql': 'create table never_made (id int);',
      '0099_more.sql': 'create table framework_module (id int);',
    });
    const refused = await start([defineModule({ name: 'framework', migrations: dir })]);
    expect(refused).toBe(
      "BootCheckError: startup checks failed:\n- module framework: the name is the framework's own (the owner of migrations/framework/)",
    );
  });

  it('refuses a file with its own COMMIT before running any of it, in one line naming the file', async () => {
    const pool = poolFor(await createTestDatabase());
    const dir = migrationDir({
      '0001_ok.sql': 'create table kept (id int);',
      '0002_tx.sql':
        'begin; create table committed_early (id int); commit; create table after (id int); select * from nowhere;',
    });
    const failure = await runMigrations(pool, [{ owner: 'mod', dir }]).then(
      () => '',
      (err: Error) => `${err.name}: ${err.message}`,
    );
    expect(failure).toBe(
      "MigrationError: migration mod/0002_tx.sql has its own BEGIN: remove it (each file runs in a transaction of the runner's, which a COMMIT in the file would end half-way)",
    );
    const exists = async (t: string) =>
      (await pool.query<{ t: string | null }>('select to_regclass($1)::text as t', [t])).rows[0]!.t !== null;
    expect(await exists('kept')).toBe(true);
    expect(await exists('committed_early')).toBe(false);
    const { rows } = await pool.query('select owner, name from migration_history order by name');
    expect(rows).toEqual([{ owner: 'mod', name: '0001_ok.sql' }]);
  });

  it('finds a transaction statement only at the top level of a file', () => {
    expect(transactionControl('create table t (id int);\nCOMMIT;')).toBe('COMMIT');
    expect(transactionControl('-- begin;\n/* commit; */ select 1;\n  start transaction;')).toBe('START');
    expect(transactionControl("select 'begin; commit;'; select E'\\' ; commit'")).toBeUndefined();
    expect(
      transactionControl(`create function f() returns void language plpgsql as $fn$ begin perform 1; end $fn$;
        create function g() returns int language sql begin atomic select 1; end;
        comment on table t is 'end'; select "end" from t;`),
    ).toBeUndefined();
    expect(transactionControl('select 1;\nrollback')).toBe('ROLLBACK');
    expect(transactionControl('savepoint s; select 1; rollback to savepoint s; release s;')).toBeUndefined();
    expect(transactionControl("select 1; rollback work to s; prepare transaction 'x';")).toBe('PREPARE');
  });

  it('waits for another process’s migrations past a lock_timeout the role or database sets', async () => {
    const url = await createTestDatabase();
    const admin = poolFor(url);
    const { rows } = await admin.query<{ db: string }>('select current_database() as db');
    await admin.query(`alter database "${rows[0]!.db}" set lock_timeout = '200ms'`);
    const pool = poolFor(url);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      const dir = migrationDir({ '0001_t.sql': 'create table waited (id int);' });
      const run = runMigrations(pool, [{ owner: 'mod', dir }]).then(
        (applied) => applied.map((m) => m.name).join(),
        (err: Error) => `${err.name}: ${err.message}`,
      );
      await new Promise((r) => setTimeout(r, 800));
      await holder.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      expect(await run).toBe('0001_t.sql');
    } finally {
      await holder.end();
    }
  });
});
