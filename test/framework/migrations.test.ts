import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { runMigrations, MigrationError, MIGRATION_LOCK_KEY, type MigrationSource } from '../../framework/db/migrate.ts';
import { buildApp, migrationSources, ROOT } from '../../framework/app.ts';
import { defineModule } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';

const pools: pg.Pool[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function poolFor(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pools.push(pool);
  return pool;
}

/** A directory of SQL migration files, written as given. */
function migrationDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-migrations-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

async function history(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ owner: string; name: string }>(
    'select owner, name from migration_history order by applied_at, owner, name',
  );
  return rows.map((r) => `${r.owner}/${r.name}`);
}

async function tableExists(pool: pg.Pool, name: string): Promise<boolean> {
  const { rows } = await pool.query<{ t: string | null }>('select to_regclass($1)::text as t', [name]);
  return rows[0]!.t !== null;
}

describe('migrations', () => {
  it('applies files in owner order, then file name order, and records each once', async () => {
    const pool = poolFor(await createTestDatabase());
    const first = migrationDir({
      '0002_second.sql': `insert into steps (step) values ('first/0002');`,
      '0001_create.sql': `create table steps (n serial primary key, step text not null); insert into steps (step) values ('first/0001');`,
      '0010_tenth.sql': `insert into steps (step) values ('first/0010');`,
      'README.md': 'not a migration',
    });
    const second = migrationDir({ '0001_create.sql': `insert into steps (step) values ('second/0001');` });
    const sources: MigrationSource[] = [
      { owner: 'first', dir: first },
      { owner: 'second', dir: second },
    ];
    const applied = await runMigrations(pool, sources);
    const expected = [
      'first/0001_create.sql',
      'first/0002_second.sql',
      'first/0010_tenth.sql',
      'second/0001_create.sql',
    ];
    expect(applied.map((m) => `${m.owner}/${m.name}`)).toEqual(expected);
    const { rows } = await pool.query<{ step: string }>('select step from steps order by n');
    expect(rows.map((r) => r.step)).toEqual(['first/0001', 'first/0002', 'first/0010', 'second/0001']);
    expect(await history(pool)).toEqual(expected);

    // A second run applies nothing; a new file is picked up on the next.
    expect(await runMigrations(pool, sources)).toEqual([]);
    writeFileSync(join(first, '0011_later.sql'), `insert into steps (step) values ('first/0011');`);
    expect(await runMigrations(pool, sources)).toEqual([{ owner: 'first', name: '0011_later.sql' }]);
    expect((await pool.query('select count(*)::int as n from steps')).rows[0].n).toBe(5);
  });

  it('keys history by (owner, name): the same file name under two owners is two migrations', async () => {
    const pool = poolFor(await createTestDatabase());
    const a = migrationDir({ '0001_init.sql': 'create table a_things (id int);' });
    const b = migrationDir({ '0001_init.sql': 'create table b_things (id int);' });
    const applied = await runMigrations(pool, [
      { owner: 'alpha', dir: a },
      { owner: 'beta', dir: b },
    ]);
    expect(applied).toEqual([
      { owner: 'alpha', name: '0001_init.sql' },
      { owner: 'beta', name: '0001_init.sql' },
    ]);
    expect(await tableExists(pool, 'a_things')).toBe(true);
    expect(await tableExists(pool, 'b_things')).toBe(true);
    const { rows } = await pool.query<{ columns: string[] }>(
      `select array_agg(a.attname::text order by array_position(i.indkey, a.attnum)) as columns
         from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any (i.indkey)
        where i.indrelid = 'migration_history'::regclass and i.indisprimary`,
    );
    expect(rows[0]!.columns).toEqual(['owner', 'name']);
  });

  it('a file replacing earlier files of its owner (`-- replaces:`): where they ran, they stay recorded and the replacing file runs after them; where they did not, they never run', async () => {
    const before = {
      '0001_make.sql': 'create table things (id int);',
      '0002_more.sql': 'alter table things add c int;',
    };
    const replacing = {
      '0003_own.sql': `-- replaces: 0001_make.sql, 0002_more.sql
        create table if not exists things (id int); alter table things add column if not exists c int;`,
    };
    // An installation that applied the old files, then upgrades.
    const upgraded = poolFor(await createTestDatabase());
    const dir = migrationDir(before);
    await runMigrations(upgraded, [{ owner: 'mod', dir }]);
    writeFileSync(join(dir, '0003_own.sql'), replacing['0003_own.sql']);
    expect((await runMigrations(upgraded, [{ owner: 'mod', dir }])).map((m) => m.name)).toEqual(['0003_own.sql']);
    expect(await history(upgraded)).toEqual(['mod/0001_make.sql', 'mod/0002_more.sql', 'mod/0003_own.sql']);
    // A new installation: the replaced files are not applied, now or on a later run.
    const fresh = poolFor(await createTestDatabase());
    const both = migrationDir({ ...before, ...replacing });
    expect((await runMigrations(fresh, [{ owner: 'mod', dir: both }])).map((m) => m.name)).toEqual(['0003_own.sql']);
    expect(await runMigrations(fresh, [{ owner: 'mod', dir: both }])).toEqual([]);
    expect(await history(fresh)).toEqual(['mod/0003_own.sql']);
    expect(await tableExists(fresh, 'things')).toBe(true);
  });

  it('a `-- replaces:` naming no earlier file of its owner stops the run before anything runs', async () => {
    const pool = poolFor(await createTestDatabase());
    const dir = migrationDir({
      '0001_ok.sql': 'create table kept (id int);',
      '0002_own.sql': '-- replaces: 0001_okay.sql\nselect 1;',
    });
    await expect(runMigrations(pool, [{ owner: 'mod', dir }])).rejects.toThrow(
      'migration mod/0002_own.sql replaces 0001_okay.sql, which is no earlier file of mod',
    );
    expect(await tableExists(pool, 'kept')).toBe(false);
  });

  it('a failing migration stops the run and leaves nothing of itself; earlier files stay committed', async () => {
    const pool = poolFor(await createTestDatabase());
    const dir = migrationDir({
      '0001_ok.sql': 'create table kept (id int);',
      // The first statement succeeds, the second fails: the first must not survive.
      '0002_broken.sql':
        'create table half_done (id int); insert into half_done values (1); select * from no_such_table;',
      '0003_after.sql': 'create table never_reached (id int);',
    });
    const sources = [{ owner: 'mod', dir }];
    const failure = await runMigrations(pool, sources).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(MigrationError);
    expect((failure as Error).message).toMatch(
      /^migration mod\/0002_broken\.sql failed: relation "no_such_table" does not exist$/,
    );
    expect(await tableExists(pool, 'kept')).toBe(true);
    expect(await tableExists(pool, 'half_done')).toBe(false);
    expect(await tableExists(pool, 'never_reached')).toBe(false);
    expect(await history(pool)).toEqual(['mod/0001_ok.sql']);

    // Once fixed, the run resumes at the failed file.
    writeFileSync(join(dir, '0002_broken.sql'), 'create table half_done (id int);');
    expect((await runMigrations(pool, sources)).map((m) => m.name)).toEqual(['0002_broken.sql', '0003_after.sql']);
  });

  it('each file commits with its history row: when the history row cannot be written, the file’s work is undone', async () => {
    const pool = poolFor(await createTestDatabase());
    // This file writes its own history row first, so the runner's insert of it conflicts.
    const dir = migrationDir({
      '0001_self.sql': `create table from_self (id int);
        insert into migration_history (owner, name) values ('mod', '0001_self.sql');`,
    });
    await expect(runMigrations(pool, [{ owner: 'mod', dir }])).rejects.toThrow(
      /migration mod\/0001_self\.sql failed: duplicate key/,
    );
    expect(await tableExists(pool, 'from_self')).toBe(false);
    expect(await history(pool)).toEqual([]);
  });

  it('runs behind an advisory lock: a run waits while another process holds it', async () => {
    const url = await createTestDatabase();
    const pool = poolFor(url);
    const holder = new pg.Client({ connectionString: url });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      const dir = migrationDir({ '0001_t.sql': 'create table locked_out (id int);' });
      let done = false;
      const run = runMigrations(pool, [{ owner: 'mod', dir }]).then((r) => {
        done = true;
        return r;
      });
      // Wait until the run is queued on the lock, then check it did nothing meanwhile.
      await poll(async () => {
        const { rows } = await holder.query<{ n: number }>(
          `select count(*)::int as n from pg_locks
            where locktype = 'advisory' and not granted
              and database = (select oid from pg_database where datname = current_database())`,
        );
        return rows[0]!.n === 1;
      });
      expect(done).toBe(false);
      expect(await tableExists(pool, 'locked_out')).toBe(false);
      await holder.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      expect(await run).toEqual([{ owner: 'mod', name: '0001_t.sql' }]);
      expect(await tableExists(pool, 'locked_out')).toBe(true);
    } finally {
      await holder.end();
    }
  });

  it('a failing migration stops startup', async () => {
    const url = await createTestDatabase();
    const brokenDir = migrationDir({
      '0001_broken.sql': 'create table broken_partial (id int); alter table nowhere add column x int;',
    });
    const broken = defineModule({ name: 'broken', migrations: brokenDir });
    const failure = await buildApp({
      config: testConfig(),
      modules: [...allModules, broken],
      databaseUrl: url,
      role: 'web',
      startWorker: false,
    }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(MigrationError);
    expect((failure as Error).message).toContain('migration broken/0001_broken.sql failed');
    const pool = poolFor(url);
    expect(await tableExists(pool, 'broken_partial')).toBe(false);
    // Everything before it (framework and earlier modules) committed; nothing of the broken owner did.
    const done = await history(pool);
    expect(done).toContain('framework/0001_core.sql');
    expect(done.some((m) => m.startsWith('broken/'))).toBe(false);
    // No tenant was created: startup stopped at the migrations.
    expect(await tableExists(pool, 'tenants')).toBe(true);
    expect((await pool.query('select count(*)::int as n from tenants')).rows[0].n).toBe(0);
  });

  it('two processes starting at once apply each migration exactly once', async () => {
    const url = await createTestDatabase();
    const pool = poolFor(url);
    const raceDir = migrationDir({
      '0001_race.sql': `create table if not exists race_log (name text, pid int);
        insert into race_log values ('0001_race.sql', pg_backend_pid());
        select pg_sleep(0.2);`,
      '0002_race.sql': `insert into race_log values ('0002_race.sql', pg_backend_pid());`,
    });
    mkdirSync(raceDir, { recursive: true });
    const sources = [...migrationSources(allModules), { owner: 'race', dir: raceDir }];

    // Both children connect, then queue on a barrier lock this test holds; releasing it starts them together.
    const BARRIER = 4_242_001;
    const gate = new pg.Client({ connectionString: url });
    await gate.connect();
    await gate.query('select pg_advisory_lock($1)', [BARRIER]);
    const script = `
      import pg from 'pg';
      import { runMigrations } from ${JSON.stringify(join(ROOT, 'framework/db/migrate.ts'))};
      const sources = JSON.parse(process.env.SOURCES);
      const barrier = new pg.Client({ connectionString: process.env.URL });
      await barrier.connect();
      await barrier.query('select pg_advisory_lock_shared($1)', [Number(process.env.BARRIER)]);
      await barrier.end();
      const pool = new pg.Pool({ connectionString: process.env.URL, max: 2 });
      const applied = await runMigrations(pool, sources);
      await pool.end();
      process.stdout.write(JSON.stringify(applied));
    `;
    const env = { ...process.env, URL: url, SOURCES: JSON.stringify(sources), BARRIER: String(BARRIER) };
    const children = [0, 1].map(() => runChild(['--input-type=module', '-e', script], env));
    try {
      await poll(async () => {
        const { rows } = await gate.query<{ n: number }>(
          `select count(*)::int as n from pg_locks
            where locktype = 'advisory' and not granted and objid = $1
              and database = (select oid from pg_database where datname = current_database())`,
          [BARRIER],
        );
        return rows[0]!.n === 2;
      }, 20_000);
      await gate.query('select pg_advisory_unlock($1)', [BARRIER]);
    } finally {
      await gate.end();
    }
    const results = await Promise.all(children);
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });
    const applied = results.map((r) =>
      (JSON.parse(r.stdout) as { owner: string; name: string }[]).map((m) => `${m.owner}/${m.name}`),
    );
    const all = [...applied[0]!, ...applied[1]!];
    // Every migration applied by exactly one of the two, and together they applied all of them.
    expect(new Set(all).size).toBe(all.length);
    expect([...all].sort()).toEqual([...(await history(pool))].sort());
    expect(all).toContain('framework/0001_core.sql');
    expect(all).toContain('race/0002_race.sql');
    const { rows } = await pool.query<{ name: string; n: number }>(
      'select name, count(*)::int as n from race_log group by name order by name',
    );
    expect(rows).toEqual([
      { name: '0001_race.sql', n: 1 },
      { name: '0002_race.sql', n: 1 },
    ]);
  });
});

async function poll(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

function runChild(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolveChild, reject) => {
    const child = spawn(join(ROOT, 'node_modules/.bin/node'), args, {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolveChild({ code, stdout, stderr });
    });
  });
}
