import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrationSources } from '../../framework/app.ts';
import type { MigrationSource } from '../../framework/db/migrate.ts';
import { runMigrations } from '../../framework/db/migrate.ts';
import type { ModuleDefinition } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from './testkit-module.ts';

/**
 * Databases migrated once per test run, that a test file's database is copied from
 * (`CREATE DATABASE … TEMPLATE`) instead of running every migration again: the installation's
 * modules, and those plus the test kit (what startTestApp boots by default). Each is made from the
 * one before it, so the chain costs one migration of each file.
 *
 * A copy is the same database the migrations would have made: a template is used only when its
 * migration sources are a prefix of the app's (test/helpers/database.ts), so the app's own
 * migration run then applies the rest in the order a fresh database would have had them.
 */
export interface TemplateDatabase {
  name: string;
  sources: MigrationSource[];
}

export const TEMPLATE_MODULE_SETS: readonly (readonly ModuleDefinition[])[] = [
  allModules,
  [...allModules, testkitModule],
];

/** Migrates the chain of templates on the run's server; the databases take no connections afterwards. */
export async function createTemplateDatabases(adminUrl: string): Promise<TemplateDatabase[]> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const templates: TemplateDatabase[] = [];
  try {
    const run = randomBytes(4).toString('hex');
    for (const [i, modules] of TEMPLATE_MODULE_SETS.entries()) {
      const name = `tenantry_template_${run}_${i}`;
      const before = templates.at(-1);
      await admin.query(
        `create database ${admin.escapeIdentifier(name)}${before ? ` template ${admin.escapeIdentifier(before.name)}` : ''}`,
      );
      const sources = migrationSources(modules);
      const pool = new pg.Pool({ connectionString: databaseUrl(adminUrl, name), max: 1 });
      try {
        await runMigrations(pool, sources);
      } finally {
        await pool.end();
      }
      // A template copies only while no session is connected to it: none may connect from now on.
      await admin.query(`alter database ${admin.escapeIdentifier(name)} with is_template true allow_connections false`);
      templates.push({ name, sources });
    }
  } finally {
    await admin.end();
  }
  return templates;
}

/** Drops the templates (on a server the run does not own: TEST_DATABASE_URL). */
export async function dropTemplateDatabases(adminUrl: string, templates: readonly TemplateDatabase[]): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (const { name } of templates) {
      // Templates made from this one during the run are named after it (the security world,
      // test/security/world-template.ts): they go first.
      const { rows: derived } = await admin.query<{ datname: string }>(
        'select datname from pg_database where starts_with(datname, $1)',
        [`${name}_`],
      );
      for (const { datname } of [...derived, { datname: name }]) {
        await admin.query(`alter database ${admin.escapeIdentifier(datname)} with is_template false`);
        await admin.query(`drop database if exists ${admin.escapeIdentifier(datname)}`);
      }
    }
  } finally {
    await admin.end();
  }
}

/**
 * The template holding the most of these migrations and nothing else, applied in the same order:
 * its sources are a prefix of these. None (a fresh database) for a module set that leaves out or
 * reorders a templated module.
 */
export function templateFor(
  sources: readonly MigrationSource[],
  templates: readonly TemplateDatabase[],
): TemplateDatabase | undefined {
  const samePrefix = (t: TemplateDatabase) =>
    t.sources.length <= sources.length &&
    t.sources.every((s, i) => s.owner === sources[i]!.owner && s.dir === sources[i]!.dir);
  return templates.filter(samePrefix).sort((a, b) => b.sources.length - a.sources.length)[0];
}

export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
