import { chmodSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { runningServer, startEmbeddedPostgres, type EmbeddedServer } from '../../framework/db/embedded.ts';
import { freePort } from './ports.ts';
import { createTemplateDatabases, dropTemplateDatabases, type TemplateDatabase } from './template-databases.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
    /** Databases migrated once for the run, that test databases are copied from (database.ts). */
    pgTemplates: TemplateDatabase[];
  }
}

/**
 * The restricted roles are cluster-wide while test databases are per file: created once here, so
 * files migrating their own databases in parallel do not race to create and grant them.
 */
async function createClusterRole(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    for (const role of ['tenantry_app', 'tenantry_cross_tenant']) {
      await client.query(`do $$ begin
        if not exists (select 1 from pg_roles where rolname = '${role}') then create role ${role} nologin nobypassrls; end if;
      end $$`);
      await client.query(`grant ${role} to current_user`);
    }
  } finally {
    await client.end();
  }
}

/** Room in /dev/shm for a whole run's databases with margin (a container's default of 64 MiB is not). */
const SHM_ROOM = 8 * 1024 ** 3;

/**
 * Where the run's embedded server keeps its data: TEST_PG_DIR when set, else /dev/shm (memory)
 * when it has room, else the system's temporary directory. A run creates a database per test file
 * (7-10 MB each, over 240 in `npm run coverage`, and their WAL); on the disk every commit
 * waited for its fsync and the run's end for deleting them (docs/performance.md, "Test suite").
 * The data is thrown away at the end either way.
 */
function serverParentDir(): string {
  const chosen = process.env.TEST_PG_DIR;
  if (chosen) return chosen;
  try {
    const { bavail, bsize } = statfsSync('/dev/shm');
    if (bavail * bsize >= SHM_ROOM) return '/dev/shm';
  } catch {
    // No /dev/shm here.
  }
  return tmpdir();
}

/**
 * One PostgreSQL for the whole run: TEST_DATABASE_URL (a server where we may create databases),
 * or an embedded server in a temporary directory. Each test file creates its own database on it,
 * most as a copy of a template migrated here once (template-databases.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // The unit project alone (npx vitest run --project unit) opens no database: none is started.
  if (project.vitest.projects.every((p) => p.name === 'unit')) return async () => {};
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    const templates = await createTemplateDatabases(external);
    project.provide('pgAdminUrl', external);
    project.provide('pgTemplates', templates);
    return () => dropTemplateDatabases(external, templates);
  }
  const dir = mkdtempSync(join(serverParentDir(), 'tenantry-test-pg-'));
  // The server runs as the postgres OS user when we are root: it must reach its data directory.
  chmodSync(dir, 0o755);
  let server: EmbeddedServer | undefined;
  server = await startEmbeddedPostgres({ dir: join(dir, 'data'), port: await freePort() });
  await createClusterRole(server.adminUrl);
  project.provide('pgAdminUrl', server.adminUrl);
  project.provide('pgTemplates', await createTemplateDatabases(server.adminUrl));
  return async () => {
    // The data directory is deleted next, so the fast shutdown's checkpoint (writing out and
    // syncing every database the run created) is work thrown away: an immediate shutdown
    // (SIGQUIT, PostgreSQL's "Shutting Down the Server") skips it.
    const running = runningServer(join(dir, 'data'));
    if (running) process.kill(running.pid, 'SIGQUIT');
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
