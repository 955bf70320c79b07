import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { allModules } from '../../modules/index.ts';
import { createMigratedTestDatabase } from '../helpers/database.ts';
import { migrationSources } from '../../framework/app.ts';
import { runMigrations } from '../../framework/db/migrate.ts';
import {
  distributionPlan,
  placementOf,
  readCatalog,
  renderDistributionPlan,
} from '../../framework/schema/distribution.ts';
import { npmRun } from './processes.ts';

/**
 * Issue 49, point 3: `npm run citus:plan` prints, for the installation's database, the settings
 * Citus needs and the create_reference_table / create_distributed_table statements in dependency
 * order; the output is checked against that database's catalog. On a schema that breaks the rules
 * it prints the breaches and exits 1. Citus itself is not installed here: nothing is run on it.
 */
let url: string;
let pool: pg.Pool;
let settings: Record<string, string>;

beforeAll(async () => {
  url = await createMigratedTestDatabase(migrationSources(allModules), 'citusplan');
  pool = new pg.Pool({ connectionString: url, max: 2 });
  await runMigrations(pool, migrationSources(allModules));
  settings = {
    TENANTRY_DATABASE_URL: url,
    TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    TENANTRY_SERVER_PORT: '3000',
  };
});
afterAll(async () => {
  await pool?.end();
});

describe('npm run citus:plan', () => {
  it('prints the plan of the installation’s tables, as its catalog has them', { timeout: 120_000 }, async () => {
    const run = await npmRun('citus:plan', [], settings, 90_000);
    expect(run.code, run.stderr).toBe(0);
    const catalog = await readCatalog(pool);
    expect(run.stdout).toBe(renderDistributionPlan(distributionPlan(catalog)));
    expect(run.stdout).toContain(`alter database "${catalog.database}" set citus.propagate_set_commands = 'local';`);
    const lines = run.stdout.split('\n');
    const created = lines.flatMap(
      (l) => /^select create_(?:reference|distributed)_table\('([^']+)'/.exec(l)?.[1] ?? [],
    );
    // Every reference and tenant table of the catalog, once; each after every table it names.
    const placed = catalog.tables.filter((t) => placementOf(t) === 'reference' || placementOf(t) === 'distributed');
    expect([...created].sort()).toEqual(placed.map((t) => t.name).sort());
    for (const fk of catalog.foreignKeys) {
      if (!created.includes(fk.table) || fk.table === fk.ref_table) continue;
      expect(created.indexOf(fk.ref_table), fk.name).toBeLessThan(created.indexOf(fk.table));
    }
    for (const table of catalog.tables.filter((t) => placementOf(t) === 'distributed'))
      expect(lines.some((l) => l.startsWith(`select create_distributed_table('${table.name}', 'tenant_id'`))).toBe(
        true,
      );
    expect(run.stdout).toContain('--   outbox: ');
  });

  it('refuses a schema that breaks the rules, naming each breach', { timeout: 120_000 }, async () => {
    await pool.query('create unique index planted_title on tasks (title)');
    try {
      const run = await npmRun('citus:plan', [], settings, 90_000);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toContain('unique index planted_title on tasks lacks tenant_id');
    } finally {
      await pool.query('drop index planted_title');
    }
  });
});
