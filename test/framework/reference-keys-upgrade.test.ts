import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { migrationSources } from '../../framework/app.ts';
import { runMigrations, type MigrationSource } from '../../framework/db/migrate.ts';

/**
 * The migrations that turn the references' foreign keys composite (issue 50) upgrade a database
 * migrated at the previous head, with rows in it: the rows stay, the keys become
 * `(tenant_id, column) → users (tenant_id, id)`, and from then on the database refuses another
 * tenant's user. A row already naming another tenant's user stops the upgrade, naming its key.
 */
const ADDED: Readonly<Record<string, readonly string[]>> = {
  // And what came after (issue 49's keys carrying tenant_id): content/0005 stands in for 0004 on
  // a database that had not run it, so the previous head is before both.
  framework: ['0016_tenant_primary_keys.sql'],
  auth: ['0007_tenant_primary_keys.sql'],
  billing: ['0003_tenant_primary_keys.sql'],
  content: ['0004_author_within_tenant.sql', '0005_tenant_primary_key.sql'],
  file: ['0003_tenant_primary_keys.sql'],
  notification: ['0005_tenant_primary_keys.sql'],
  task: ['0003_assignee_within_tenant.sql', '0004_tenant_primary_keys.sql'],
  webhook: ['0005_tenant_primary_keys.sql'],
  testkit: ['0008_memo_owner_within_tenant.sql', '0009_tenant_primary_keys.sql'],
};

const SOURCES = migrationSources([...allModules, testkitModule]);
let root: string;

/** Every owner's migrations as they were before the upgrade: the added files left out. */
function previousHead(): MigrationSource[] {
  return SOURCES.map((source) => {
    const added = ADDED[source.owner];
    if (!added) return source;
    const dir = join(root, source.owner);
    cpSync(source.dir, dir, { recursive: true, filter: (path) => !added.some((name) => path.endsWith(`/${name}`)) });
    return { ...source, dir };
  });
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'tenantry-reference-upgrade-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Runs SQL as the given tenant (the policies' setting) on one connection. */
async function asTenant<T extends pg.QueryResultRow>(
  pool: pg.Pool,
  tenantId: string,
  sql: string,
  params: unknown[] = [],
): Promise<pg.QueryResult<T>> {
  const client = await pool.connect();
  try {
    await client.query(`select set_config('app.tenant_id', $1, false)`, [tenantId]);
    return await client.query<T>(sql, params);
  } finally {
    await client.query(`reset app.tenant_id`).catch(() => {});
    client.release();
  }
}

async function seed(pool: pg.Pool) {
  const tenant = async (slug: string) =>
    (await pool.query<{ id: string }>(`insert into tenants (slug, name) values ($1, $1) returning id`, [slug])).rows[0]!
      .id;
  const acme = await tenant('acme');
  const globex = await tenant('globex');
  const user = async (tenantId: string, email: string) =>
    (await asTenant<{ id: string }>(pool, tenantId, `insert into users (email) values ($1) returning id`, [email]))
      .rows[0]!.id;
  const writer = await user(acme, 'writer@acme.test');
  const stranger = await user(globex, 'stranger@globex.test');
  await asTenant(
    pool,
    acme,
    `insert into contents (slug, title, kind, body, author) values ('kept', 'Kept', 'page', '', $1)`,
    [writer],
  );
  await asTenant(
    pool,
    acme,
    `insert into tasks (title, priority, deadline, assignee_id) values ('Kept', 'low', now(), $1), ('Nobody', 'low', now(), null)`,
    [writer],
  );
  return { acme, globex, writer, stranger };
}

const keysOf = async (pool: pg.Pool) =>
  (
    await pool.query<{ name: string; definition: string }>(
      `select conname as name, pg_get_constraintdef(oid) as definition from pg_constraint
        where conname in ('contents_author_fkey', 'tasks_assignee_id_fkey', 'memos_owner_id_fkey') order by conname`,
    )
  ).rows;

describe('upgrading a database migrated at the previous head', () => {
  it('keeps its rows, makes the keys composite, and then refuses another tenant’s user', {
    timeout: 120_000,
  }, async () => {
    const pool = new pg.Pool({ connectionString: await createTestDatabase('upgrade'), max: 2 });
    try {
      await runMigrations(pool, previousHead());
      expect(await keysOf(pool)).toEqual([
        { name: 'contents_author_fkey', definition: 'FOREIGN KEY (author) REFERENCES users(id)' },
      ]);
      const { acme, writer, stranger } = await seed(pool);
      // Before: the single-column key lets acme's content name globex's user.
      await asTenant(
        pool,
        acme,
        `insert into contents (slug, title, kind, body, author) values ('x', 'X', 'page', '', $1)`,
        [stranger],
      );
      await asTenant(pool, acme, `delete from contents where slug = 'x'`);

      const applied = await runMigrations(pool, SOURCES);
      // content/0005 (issue 49) stands in for 0004 where it had not run, and does its work.
      expect(applied.map((m) => `${m.owner}/${m.name}`).sort()).toEqual([
        'auth/0007_tenant_primary_keys.sql',
        'billing/0003_tenant_primary_keys.sql',
        'content/0005_tenant_primary_key.sql',
        'file/0003_tenant_primary_keys.sql',
        'framework/0016_tenant_primary_keys.sql',
        'notification/0005_tenant_primary_keys.sql',
        'task/0003_assignee_within_tenant.sql',
        'task/0004_tenant_primary_keys.sql',
        'testkit/0008_memo_owner_within_tenant.sql',
        'testkit/0009_tenant_primary_keys.sql',
        'webhook/0005_tenant_primary_keys.sql',
      ]);
      expect(await keysOf(pool)).toEqual([
        { name: 'contents_author_fkey', definition: 'FOREIGN KEY (tenant_id, author) REFERENCES users(tenant_id, id)' },
        {
          name: 'memos_owner_id_fkey',
          definition: 'FOREIGN KEY (tenant_id, owner_id) REFERENCES users(tenant_id, id)',
        },
        {
          name: 'tasks_assignee_id_fkey',
          definition: 'FOREIGN KEY (tenant_id, assignee_id) REFERENCES users(tenant_id, id)',
        },
      ]);
      const kept = await asTenant<{ title: string; author: string | null }>(
        pool,
        acme,
        `select title, author from contents union all select title, assignee_id from tasks order by 1, 2`,
      );
      expect(kept.rows).toEqual([
        { title: 'Kept', author: writer },
        { title: 'Kept', author: writer },
        { title: 'Nobody', author: null },
      ]);
      const refused = await asTenant(
        pool,
        acme,
        `insert into contents (slug, title, kind, body, author) values ('y', 'Y', 'page', '', $1)`,
        [stranger],
      ).catch((err: { code?: string; constraint?: string }) => ({ code: err.code, constraint: err.constraint }));
      expect(refused).toEqual({ code: '23503', constraint: 'contents_author_fkey' });
    } finally {
      await pool.end();
    }
  });

  it('stops, naming the key, on a row that already names another tenant’s user', { timeout: 120_000 }, async () => {
    const pool = new pg.Pool({ connectionString: await createTestDatabase('upgrade_crossed'), max: 2 });
    try {
      await runMigrations(pool, previousHead());
      const { acme, stranger } = await seed(pool);
      await asTenant(
        pool,
        acme,
        `insert into contents (slug, title, kind, body, author) values ('x', 'X', 'page', '', $1)`,
        [stranger],
      );
      const failed = await runMigrations(pool, SOURCES).then(
        () => '',
        (err: Error) => err.message,
      );
      // content/0005 does 0004's work where it had not run (issue 49), so it is the file that stops.
      expect(failed).toMatch(/^migration content\/0005_tenant_primary_key\.sql failed: .*contents_author_fkey/);
      // The file is rolled back whole: the content keeps its old key until a person fixes the row.
      expect((await keysOf(pool)).find((key) => key.name === 'contents_author_fkey')).toEqual({
        name: 'contents_author_fkey',
        definition: 'FOREIGN KEY (author) REFERENCES users(id)',
      });
    } finally {
      await pool.end();
    }
  });
});
