import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { migrationSources } from '../../framework/app.ts';
import { defineModule } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { startTestApp } from '../helpers/app.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { templateFor } from '../helpers/template-databases.ts';
import { testkitModule } from '../helpers/testkit-module.ts';

/**
 * The test run migrates its template databases once (test/helpers/global-setup.ts); a test file's
 * app starts on a copy of the one that holds the most of its migrations, so its own migration run
 * applies only the rest, and a test of migrations still gets an empty database.
 */
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The app's log lines, the migrations it applied among them. */
async function startLogged(options: Parameters<typeof startTestApp>[0]) {
  const lines: { msg: string; migrations?: number; owners?: string }[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const app = await startTestApp({ ...options, logger: pino({ level: 'info' }, sink) as FastifyBaseLogger });
  await app.close();
  return { app, applied: lines.find((l) => l.msg === 'migrations applied') };
}

describe('test databases', () => {
  it('the default app (installation and test kit) starts on a copy with every migration applied already', async () => {
    const { app, applied } = await startLogged({});
    expect(applied).toBeUndefined();
    const db = new pg.Client({ connectionString: app.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ owner: string }>('select distinct owner from migration_history order by 1');
      expect(rows.map((r) => r.owner)).toEqual(expect.arrayContaining(['framework', 'testkit', 'user']));
    } finally {
      await db.end();
    }
  });

  it('an app with a module of its own applies only that module’s migrations, on the installation’s template', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenantry-template-probe-'));
    dirs.push(dir);
    writeFileSync(join(dir, '0001_probe.sql'), 'create table template_probe (id int primary key);');
    const probe = defineModule({ name: 'templateprobe', migrations: dir });
    const { applied } = await startLogged({ modules: [...allModules, probe] });
    expect(applied).toMatchObject({ migrations: 1, owners: 'templateprobe 1' });
  });

  it('a test of migrations themselves still gets an empty database', async () => {
    const db = new pg.Client({ connectionString: await createTestDatabase() });
    await db.connect();
    try {
      const { rows } = await db.query(`select 1 from pg_tables where schemaname = 'public'`);
      expect(rows).toEqual([]);
    } finally {
      await db.end();
    }
  });

  it('a template serves only modules that keep its migrations first and in its order', () => {
    const templates = inject('pgTemplates');
    const installation = migrationSources(allModules);
    const withTestkit = migrationSources([...allModules, testkitModule]);
    expect(templateFor(withTestkit, templates)?.sources).toEqual(withTestkit);
    expect(templateFor(installation, templates)?.sources).toEqual(installation);
    // The test kit without the installation, or the installation reordered: a fresh database.
    expect(templateFor(migrationSources([testkitModule]), templates)).toBeUndefined();
    expect(templateFor(migrationSources([...allModules].reverse()), templates)).toBeUndefined();
  });
});
