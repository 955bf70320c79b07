import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { inject } from 'vitest';
import { migrationSources } from '../../framework/app.ts';
import { allModules } from '../../modules/index.ts';
import { startTestApp } from '../helpers/app.ts';
import { cheapPasswordHasher } from '../helpers/cheap-password-hasher.ts';
import { databaseUrl, templateFor } from '../helpers/template-databases.ts';
import { Client, type TranscriptEntry } from './harness.ts';
import { buildWorld, worldOf, type Actor, type TenantWorld, type World } from './world.ts';

/**
 * The security world, built once per test run and copied for each file that attacks it.
 *
 * The four security files attack the same world (test/security/world.ts): every module, three
 * tenants, a person per permission in each, every entity's rows. Building it through the API is
 * some 600 requests and a few seconds of CPU; four files (and the same four again in the new-module
 * acceptance test's inner run) built it each. Now the first file to ask for it builds it through
 * the API as before, in a database of its own, and keeps that database as a template
 * (`CREATE DATABASE … TEMPLATE`) together with what the API answered while it was built (the
 * actors' cookies and tokens, the rows' ids, the transcript); every file, the first included, then
 * runs on a copy of it, on an app of its own. Each copy is the database the build left, so each file
 * starts from the same world it built for itself before, and what one file's sweep writes no other
 * file sees.
 *
 * The build happens under a PostgreSQL advisory lock on the run's server, so files starting
 * together build it once; a template left unfinished (a worker that died mid-build) is not marked
 * as one, and the next file drops it and builds again. A run without a security file builds nothing.
 */

/** What a file needs of the world besides its database: everything the API answered while it was built. */
interface Description {
  operator: StoredTenant;
  a: StoredTenant;
  b: StoredTenant;
  spareTenantId: string;
  spareHost: string;
  plans: World['plans'];
  globalRows: [string, Record<string, unknown>[]][];
  requests: number;
  transcript: TranscriptEntry[];
}
type StoredTenant = Omit<TenantWorld, 'holder' | 'entityRows' | 'actors'> & {
  holder: [string, string][];
  entityRows: [string, Record<string, unknown>[]][];
  actors: Actor[];
};

/** The schema the description travels in, inside the template; each copy drops it before its app starts. */
const DESCRIPTION_SCHEMA = 'security_world';
/** Any key that names the lock; the world's template name makes it the run's and the module set's. */
const lockKey = (name: string) => `security world ${name}`;

/** Opens the run's security world on a database of this file's own (building the template first if no file has). */
export async function openWorld(): Promise<World> {
  const adminUrl = inject('pgAdminUrl');
  const base = templateFor(migrationSources(allModules), inject('pgTemplates'));
  if (!base) throw new Error('no migrated template of the installation modules for the security world');
  const template = `${base.name}_security_world`;
  await ensureTemplate(adminUrl, base.name, template);

  const admin = new pg.Client({ connectionString: adminUrl });
  const copy = `sec_${Math.random().toString(16).slice(2, 14)}`;
  await admin.connect();
  try {
    await admin.query(`create database ${admin.escapeIdentifier(copy)} template ${admin.escapeIdentifier(template)}`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(adminUrl, copy);
  const description = await takeDescription(url);

  const app = await startTestApp({ modules: allModules, passwordHasher: cheapPasswordHasher, databaseUrl: url });
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  const client = new Client((app.web!.server.address() as AddressInfo).port);
  // The build's answers stay in the transcript, as when each file built its own world: the leak
  // scan reads them with the sweep's.
  client.transcript.push(...description.transcript);
  client.requests = description.requests;
  const tenant = (stored: StoredTenant): TenantWorld => {
    const actors = new Map(stored.actors.map((actor) => [actor.label, actor]));
    const actor = (label: string) => actors.get(label) ?? missing(label);
    return {
      ...stored,
      admin: actor(stored.admin.label),
      member: actor(stored.member.label),
      holder: new Map(stored.holder.map(([permission, label]) => [permission, actor(label)])),
      entityRows: new Map(stored.entityRows),
      actors: [...actors.values()],
    };
  };
  const [operator, a, b] = [tenant(description.operator), tenant(description.a), tenant(description.b)];
  return worldOf(app, client, {
    operator,
    a,
    b,
    spareTenantId: description.spareTenantId,
    spareHost: description.spareHost,
    plans: description.plans,
    globalRows: new Map(description.globalRows),
  });
}

const missing = (label: string): never => {
  throw new Error(`the security world's description names no actor ${label}`);
};

/** Builds the template unless a file of this run has: once, under the lock. */
async function ensureTemplate(adminUrl: string, base: string, template: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query('select pg_advisory_lock(hashtext($1))', [lockKey(template)]);
    const { rows } = await admin.query<{ ready: boolean }>(
      'select datistemplate as ready from pg_database where datname = $1',
      [template],
    );
    if (rows[0]?.ready) return;
    // Left by a build that did not finish: not the world.
    if (rows[0]) await admin.query(`drop database ${admin.escapeIdentifier(template)} with (force)`);
    await admin.query(`create database ${admin.escapeIdentifier(template)} template ${admin.escapeIdentifier(base)}`);
    const url = databaseUrl(adminUrl, template);
    const world = await buildWorld('sec', url);
    try {
      await storeDescription(url, descriptionOf(world));
    } finally {
      world.client.close();
      await world.app.close();
    }
    // A template copies only while no session is connected to it: none may connect from now on.
    await admin.query(
      `alter database ${admin.escapeIdentifier(template)} with is_template true allow_connections false`,
    );
  } finally {
    // Ending the session releases the lock, also when the build failed.
    await admin.end();
  }
}

function descriptionOf(world: World): Description {
  const stored = (t: TenantWorld): StoredTenant => ({
    ...t,
    holder: [...t.holder.entries()].map(([permission, actor]) => [permission, actor.label]),
    entityRows: [...t.entityRows.entries()],
    actors: t.actors,
  });
  return {
    operator: stored(world.operator),
    a: stored(world.a),
    b: stored(world.b),
    spareTenantId: world.spareTenantId,
    spareHost: world.spareHost,
    plans: world.plans,
    globalRows: [...world.globalRows.entries()],
    requests: world.client.requests,
    transcript: world.client.transcript,
  };
}

async function storeDescription(url: string, description: Description): Promise<void> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(`create schema ${DESCRIPTION_SCHEMA}`);
    await db.query(`create table ${DESCRIPTION_SCHEMA}.description (body text not null)`);
    await db.query(`insert into ${DESCRIPTION_SCHEMA}.description (body) values ($1)`, [JSON.stringify(description)]);
  } finally {
    await db.end();
  }
}

/** Reads the description from a copy and drops it there: the app then runs on exactly the database the build left. */
async function takeDescription(url: string): Promise<Description> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query<{ body: string }>(`select body from ${DESCRIPTION_SCHEMA}.description`);
    await db.query(`drop schema ${DESCRIPTION_SCHEMA} cascade`);
    return JSON.parse(rows[0]!.body) as Description;
  } finally {
    await db.end();
  }
}
