import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { createMigratedTestDatabase, createTestDatabase } from '../helpers/database.ts';
import { migrationSources } from '../../framework/app.ts';
import { runMigrations } from '../../framework/db/migrate.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { generateMigration } from '../../framework/schema/generate.ts';
import {
  distributionPlan,
  distributionProblems,
  placementOf,
  readCatalog,
  renderDistributionPlan,
  type Catalog,
} from '../../framework/schema/distribution.ts';

/**
 * Issue 49, point 3: a schema Citus can distribute by tenant_id, checked against PostgreSQL's
 * catalog of a freshly migrated installation (its modules, pg-boss's schema as the worker makes
 * it). Every tenant table's primary and unique keys carry tenant_id, foreign keys between tenant
 * tables carry it, every policy compares tenant_id with the setting without a subquery, and every
 * other table is listed as a reference or coordinator table. Each rule is shown to bite on a
 * planted breach, in a transaction rolled back.
 */
let pool: pg.Pool;
let catalog: Catalog;

beforeAll(async () => {
  const url = await createMigratedTestDatabase(migrationSources(allModules), 'citus');
  pool = new pg.Pool({ connectionString: url, max: 2 });
  await runMigrations(pool, migrationSources(allModules));
  // pg-boss's schema, as the worker creates it at its first start.
  const boss = new PgBoss({ connectionString: url, schema: 'pgboss', max: 1, supervise: false, schedule: false });
  boss.on('error', () => {});
  await boss.start();
  await boss.stop({ graceful: false, close: true });
  catalog = await readCatalog(pool);
});
afterAll(async () => {
  await pool?.end();
});

/** The problems the catalog shows while `plant` is in place (rolled back after). */
async function problemsWith(plant: string): Promise<string[]> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    await client.query(plant);
    return distributionProblems(await readCatalog(client));
  } finally {
    await client.query('rollback');
    client.release();
  }
}

describe('the migrated installation can be distributed by tenant_id', () => {
  it('breaks no rule: keys, foreign keys and policies carry tenant_id; every other table is listed', () => {
    expect(distributionProblems(catalog)).toEqual([]);
  });

  it('reads every table of the installation, pg-boss included, and places each', () => {
    const names = catalog.tables.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['users', 'tasks', 'outbox', 'tenants', 'migration_history']));
    expect(names.some((n) => n.startsWith('pgboss.'))).toBe(true);
    for (const table of catalog.tables) expect(placementOf(table), table.name).toBeDefined();
    const placed = (name: string) => {
      const table = catalog.tables.find((t) => t.name === name);
      return table && placementOf(table);
    };
    expect(placed('users')).toBe('distributed');
    expect(placed('tenants')).toBe('reference');
    expect(placed('plans')).toBe('reference');
    expect(placed('outbox')).toBe('coordinator');
    expect(placed('migration_history')).toBe('coordinator');
    // Every tenant table's primary key, as the catalog has it, holds tenant_id.
    const tenantKeys = catalog.keys.filter((k) => k.kind === 'p' && placed(k.table) === 'distributed');
    expect(tenantKeys.length).toBeGreaterThan(15);
    for (const key of tenantKeys) expect(key.columns, key.name).toContain('tenant_id');
  });
});

describe('the check fails on each breach planted in the database', () => {
  it('a unique key without tenant_id', async () => {
    const problems = await problemsWith('create unique index planted_title on tasks (title)');
    expect(problems).toEqual([expect.stringContaining('unique index planted_title on tasks lacks tenant_id')]);
  });

  it('a unique constraint and a primary key without tenant_id', async () => {
    expect(await problemsWith('alter table contents add constraint planted_slug unique (slug)')).toEqual([
      expect.stringContaining('unique constraint planted_slug on contents lacks tenant_id'),
    ]);
    expect(
      await problemsWith('alter table tasks drop constraint tasks_pkey, add constraint tasks_pkey primary key (id)'),
    ).toEqual([expect.stringContaining('primary key tasks_pkey on tasks lacks tenant_id')]);
  });

  it('a foreign key between tenant tables without tenant_id', async () => {
    const problems = await problemsWith(
      // The key's columns pair tenant_id with the user's id: the rows would not sit on one node.
      'alter table tasks add column planted_user uuid, add constraint planted_fkey foreign key (tenant_id, planted_user) references users (id, tenant_id)',
    );
    expect(problems).toEqual([expect.stringContaining('foreign key planted_fkey on tasks')]);
    expect(problems[0]).toContain('does not carry tenant_id');
  });

  it('a policy that does not compare tenant_id, and one with a subquery', async () => {
    expect(await problemsWith(`create policy planted_open on tasks for select using (status <> 'closed')`)).toEqual([
      expect.stringContaining('policy planted_open on tasks (using) does not compare tenant_id'),
    ]);
    const subquery = await problemsWith(
      'create policy planted_subquery on tasks for select using (tenant_id = app_tenant_id() and exists (select 1 from users u where u.id = assignee_id))',
    );
    expect(subquery).toContainEqual(expect.stringContaining('policy planted_subquery on tasks contains a subquery'));
  });

  it('a table neither tenant-owned nor listed, and a tenant table without row-level security', async () => {
    expect(await problemsWith('create table planted_global (id uuid primary key)')).toEqual([
      expect.stringContaining('table planted_global has no tenant_id and is not listed'),
    ]);
    expect(await problemsWith('alter table tasks disable row level security')).toEqual([
      'table tasks carries tenant_id but has no row-level security',
    ]);
  });
});

describe('npm run citus:plan: the statements, in dependency order, from the catalog', () => {
  it('distributes every tenant table once by tenant_id, after every table it names; references first', () => {
    const plan = distributionPlan(catalog);
    const text = renderDistributionPlan(plan);
    expect(plan.settings).toEqual([`alter database "${catalog.database}" set citus.propagate_set_commands = 'local';`]);
    expect(text).toContain("citus.propagate_set_commands = 'local'");
    const created = [...plan.reference, ...plan.distributed].map((s) => /\('([^']+)'/.exec(s)![1]!);
    const expected = catalog.tables.filter((t) => ['reference', 'distributed'].includes(placementOf(t)!));
    expect([...created].sort()).toEqual(expected.map((t) => t.name).sort());
    for (const table of catalog.tables.filter((t) => placementOf(t) === 'distributed'))
      expect(
        plan.distributed.filter((s) => s.includes(`('${table.name}', 'tenant_id'`)),
        table.name,
      ).toHaveLength(1);
    for (const table of catalog.tables.filter((t) => placementOf(t) === 'reference'))
      expect(plan.reference).toContain(`select create_reference_table('${table.name}');`);
    // Each foreign key's target is created before its table.
    const position = new Map(created.map((name, i) => [name, i]));
    for (const fk of catalog.foreignKeys) {
      if (!position.has(fk.table) || fk.table === fk.ref_table) continue;
      expect(position.get(fk.ref_table), `${fk.name}: ${fk.ref_table} before ${fk.table}`).toBeLessThan(
        position.get(fk.table)!,
      );
    }
    expect(position.get('users')!).toBeLessThan(position.get('tasks')!);
    expect(position.get('imports')!).toBeLessThan(position.get('import_refusals')!);
    // Colocated with the first: the joins and foreign keys between tenant tables stay on one node.
    const [first, ...rest] = plan.distributed;
    expect(first).not.toContain('colocate_with');
    for (const statement of rest) expect(statement).toMatch(/colocate_with => '[a-z_]+'\);$/);
    for (const { table } of plan.coordinator) expect(text).toContain(`--   ${table}: `);
  });
});

describe('the migration generator writes keys that pass the check', () => {
  it("a new tenant table's primary key is (tenant_id, id), and an old one keyed by id alone gains tenant_id", async () => {
    const gen = new pg.Pool({ connectionString: await createTestDatabase('citusgen'), max: 2 });
    try {
      await runMigrations(gen, migrationSources([]));
      const entities = [...allModules, testkitModule].flatMap((m) => m.entities ?? []);
      const result = await generateMigration(gen, entities, { allowDestructive: true, command: 'readiness test' });
      expect(result.sql).toMatch(/create table tasks \([\s\S]*primary key \(tenant_id, id\)/);
      await gen.query(result.sql!);
      const tables = new Set(entities.map((e) => resolveEntity(e).names.table));
      const about = (p: string) => [...tables].some((t) => new RegExp(`\\b(on|table) ${t}\\b`).test(p));
      // gadgets is the test kit's global entity, listed nowhere in an installation.
      expect(distributionProblems(await readCatalog(gen)).filter(about)).toEqual([
        expect.stringContaining('table gadgets has no tenant_id and is not listed'),
      ]);
      // A tenant table made before keys carried the tenant: the generator gives it its key.
      await gen.query('alter table tasks drop constraint tasks_pkey, add constraint tasks_pkey primary key (id)');
      const again = await generateMigration(gen, entities, { allowDestructive: true, command: 'readiness test' });
      expect(again.sql).toContain(
        'alter table tasks drop constraint tasks_pkey, add constraint tasks_pkey primary key (tenant_id, id);',
      );
      await gen.query(again.sql!);
      expect(distributionProblems(await readCatalog(gen)).filter(about)).toHaveLength(1);
    } finally {
      await gen.end();
    }
  });
});
