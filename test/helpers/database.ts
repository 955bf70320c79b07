import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import type { MigrationSource } from '../../framework/db/migrate.ts';
import { databaseUrl, templateFor } from './template-databases.ts';

/** A fresh, empty database on the run's PostgreSQL server; every test file gets its own. */
export async function createTestDatabase(prefix = 't'): Promise<string> {
  return createDatabase(prefix);
}

/**
 * A database for an app with these migration sources: a copy of the run's template that holds the
 * most of them (global-setup.ts, template-databases.ts), so that the app's own migration run has
 * only the rest to apply; a fresh, empty database when no template fits. A test of migrations
 * themselves takes createTestDatabase.
 */
export async function createMigratedTestDatabase(sources: readonly MigrationSource[], prefix = 't'): Promise<string> {
  return createDatabase(prefix, templateFor(sources, inject('pgTemplates'))?.name);
}

async function createDatabase(prefix: string, template?: string): Promise<string> {
  const adminUrl = inject('pgAdminUrl');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const from = template ? ` template ${client.escapeIdentifier(template)}` : '';
    await client.query(`create database ${client.escapeIdentifier(name)}${from}`);
  } finally {
    await client.end();
  }
  return databaseUrl(adminUrl, name);
}
