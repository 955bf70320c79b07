import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { buildApp, migrationSources, ROOT } from '../../framework/app.ts';
import { runMigrations, type MigrationSource } from '../../framework/db/migrate.ts';
import { IDENTITY_TABLES } from '../../framework/access/identity-tables.ts';
import { hashSecret, newSessionId } from '../../framework/access/session-cookie.ts';
import { allModules } from '../../modules/index.ts';
import { sourceFiles } from '../helpers/import-graph.ts';
import { snapshotTables } from '../helpers/catalog-snapshot.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';

/**
 * The identity schema is the framework's (docs/architecture.md, "The identity schema"): its own
 * migrations create users (the core columns), roles, sessions and access_tokens, and its SQL names
 * no table a module's migration creates. Installations migrated while the user and auth modules
 * created those tables upgrade to the schema a new installation gets, their sessions still
 * resolving: the modules' old files are replaced, never edited (framework/db/migrate.ts).
 */
const MIGRATIONS = join(ROOT, 'migrations');
/** The files of the move; an installation migrated before it has none of them. */
const MOVE = ['framework/0013_identity.sql', 'user/0004_people_columns.sql', 'auth/0006_token_names.sql'];
/**
 * Files newer than the move that change its tables (issue 49: keys carrying tenant_id): an
 * installation from before the move has not run them either, so they are left out of it and
 * applied by the upgrade, in the runner's order (framework, then the modules in theirs).
 */
const KEYS_WITH_TENANT = [
  'framework/0016_tenant_primary_keys.sql',
  'auth/0007_tenant_primary_keys.sql',
  'notification/0005_tenant_primary_keys.sql',
  'task/0004_tenant_primary_keys.sql',
  'billing/0003_tenant_primary_keys.sql',
  'content/0005_tenant_primary_key.sql',
  'file/0003_tenant_primary_keys.sql',
  'webhook/0005_tenant_primary_keys.sql',
];
const UPGRADE = [MOVE[0]!, KEYS_WITH_TENANT[0]!, MOVE[1]!, MOVE[2]!, ...KEYS_WITH_TENANT.slice(1)];
/** The tables the move touches, and the module tables that name them. */
const TABLES = ['users', 'roles', 'sessions', 'access_tokens', 'set_password_tokens', 'auth_attempts', 'contents'];

const pools: pg.Pool[] = [];
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function database(): Promise<{ url: string; pool: pg.Pool }> {
  const url = await createTestDatabase('identity');
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pools.push(pool);
  return { url, pool };
}

/** The installation's migration sources, read from a copy of migrations/ without these files. */
function sourcesWithout(files: readonly string[]): MigrationSource[] {
  const copy = mkdtempSync(join(tmpdir(), 'tenantry-before-'));
  dirs.push(copy);
  cpSync(MIGRATIONS, copy, { recursive: true });
  for (const file of files) rmSync(join(copy, file));
  return migrationSources(allModules).map((s) => ({ owner: s.owner, dir: join(copy, relative(MIGRATIONS, s.dir)) }));
}

async function history(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ m: string }>(`select owner || '/' || name as m from migration_history`);
  return rows.map((r) => r.m).sort();
}

/** A tenant, an active admin and a session for them, written as the owner on the schema as it is. */
async function seedSignedIn(pool: pg.Pool): Promise<{ tenant: string; user: string; rawId: string }> {
  const client = await pool.connect();
  try {
    const { rows } = await client.query<{ id: string }>(
      `insert into tenants (slug, name) values ('kept', 'Kept') returning id`,
    );
    const tenant = rows[0]!.id;
    // The forced tenant policy holds the owner too: write in the tenant's scope.
    await client.query(`select set_config('app.tenant_id', $1, false)`, [tenant]);
    await client.query(`insert into roles (name, permissions) values ('admin', '{*}'), ('member', '{}')`);
    const user = (
      await client.query<{ id: string }>(
        `insert into users (email, status, roles) values ('ada@kept.localhost', 'active', '{admin}') returning id`,
      )
    ).rows[0]!.id;
    const rawId = newSessionId();
    await client.query(
      `insert into sessions (id_hash, user_id, expires_at) values ($1, $2, now() + interval '1 day')`,
      [hashSecret(rawId), user],
    );
    return { tenant, user, rawId };
  } finally {
    client.release();
  }
}

describe('the identity schema is the framework’s', () => {
  it("the framework's migrations alone create users (its core columns), roles, sessions and access_tokens, isolated by tenant", async () => {
    const { pool } = await database();
    await runMigrations(pool, migrationSources([]));
    const tables = await snapshotTables(
      pool,
      IDENTITY_TABLES.map((t) => t.table),
    );
    for (const { table, columns } of IDENTITY_TABLES) {
      const made = tables.get(table)!;
      for (const [column, type] of Object.entries(columns)) {
        const formatted = type === 'timestamptz' ? 'timestamp with time zone' : type;
        const line = made.columns.find(
          (l) => l === `${column} ${formatted}` || l.startsWith(`${column} ${formatted} `),
        );
        expect(line, `${table}.${column} ${type}`).toBeDefined();
      }
      expect(made.security, table).toEqual(['row security true, forced true']);
      expect(made.policies.length, table).toBe(1);
    }
    // What a person is beyond the core is the user module's: not the framework's to create.
    expect(tables.get('users')!.columns.some((line) => line.startsWith('email '))).toBe(false);
  });

  it("the framework's SQL names no table a module's migration creates", () => {
    const created = (owner: string) =>
      readdirSync(join(MIGRATIONS, owner)).flatMap((file) =>
        [
          ...readFileSync(join(MIGRATIONS, owner, file), 'utf8').matchAll(/create table (?:if not exists )?(\w+)/gi),
        ].map((m) => m[1]!.toLowerCase()),
      );
    const framework = new Set(created('framework'));
    const moduleTables = readdirSync(MIGRATIONS)
      .filter((owner) => owner !== 'framework')
      .flatMap(created)
      .filter((table) => !framework.has(table));
    expect(moduleTables).toEqual(expect.arrayContaining(['set_password_tokens', 'auth_attempts', 'tasks', 'plans']));
    const naming = new RegExp(`\\b(?:from|join|into|update|table)\\s+(${moduleTables.join('|')})\\b`, 'i');
    const found = sourceFiles(ROOT, 'framework').flatMap((file) => {
      const match = naming.exec(readFileSync(join(ROOT, file), 'utf8'));
      return match ? [`${file}: ${match[0]}`] : [];
    });
    expect(found).toEqual([]);
  });

  // Two databases migrated from scratch and a service started: minutes on a loaded machine.
  it('an installation migrated before the move upgrades to the schema a new installation gets, its session still resolving', {
    timeout: 180_000,
  }, async () => {
    const before = await database();
    await runMigrations(before.pool, sourcesWithout([...MOVE, ...KEYS_WITH_TENANT]));
    const seeded = await seedSignedIn(before.pool);
    const applied = await runMigrations(before.pool, migrationSources(allModules));
    expect(applied.map((m) => `${m.owner}/${m.name}`)).toEqual(UPGRADE);
    // The files the move replaced stay recorded where they ran.
    expect(await history(before.pool)).toEqual(
      expect.arrayContaining(['user/0001_users.sql', 'auth/0001_sessions_roles.sql', 'auth/0005_access_tokens.sql']),
    );

    const fresh = await database();
    await runMigrations(fresh.pool, migrationSources(allModules));
    // A new installation never runs them.
    const freshHistory = await history(fresh.pool);
    for (const replaced of [
      'user/0001_users.sql',
      'user/0002_list_indexes.sql',
      'auth/0001_sessions_roles.sql',
      'auth/0005_access_tokens.sql',
    ])
      expect(freshHistory).not.toContain(replaced);
    expect(freshHistory).toEqual(expect.arrayContaining(MOVE));

    const [upgraded, made] = await Promise.all([
      snapshotTables(before.pool, TABLES),
      snapshotTables(fresh.pool, TABLES),
    ]);
    for (const table of TABLES) {
      expect(upgraded.get(table)!.columns.length, `${table} exists`).toBeGreaterThan(0);
      expect(upgraded.get(table), table).toEqual(made.get(table));
    }

    // The service starts on the upgraded database (its boot checks pass) and the session made
    // before the upgrade still signs its user in, with the permissions of their role.
    const app = await buildApp({
      config: testConfig(),
      modules: allModules,
      databaseUrl: before.url,
      role: 'web',
      startWorker: false,
    });
    try {
      const tenant = { id: seeded.tenant, slug: 'kept', isOperator: false };
      const session = await app.services.transactions.run(tenant, async (tx) => tx.session, {
        sessionHash: hashSecret(seeded.rawId),
      });
      expect(session?.userId).toBe(seeded.user);
      expect([...(session?.permissions ?? [])]).toEqual(['*']);
    } finally {
      await app.close();
    }
  });

  it('an installation from before personal access tokens gets access_tokens from the framework and its names from auth', {
    timeout: 180_000,
  }, async () => {
    const before = await database();
    await runMigrations(before.pool, sourcesWithout([...MOVE, ...KEYS_WITH_TENANT, 'auth/0005_access_tokens.sql']));
    expect((await before.pool.query(`select to_regclass('access_tokens') as t`)).rows[0].t).toBeNull();
    await runMigrations(before.pool, migrationSources(allModules));
    // auth/0005 is replaced: it never runs here either.
    expect(await history(before.pool)).not.toContain('auth/0005_access_tokens.sql');
    const fresh = await database();
    await runMigrations(fresh.pool, migrationSources(allModules));
    const [upgraded, made] = await Promise.all([
      snapshotTables(before.pool, ['access_tokens']),
      snapshotTables(fresh.pool, ['access_tokens']),
    ]);
    expect(upgraded.get('access_tokens')!.columns).toContain('name text not null');
    expect(upgraded.get('access_tokens')).toEqual(made.get('access_tokens'));
  });
});
