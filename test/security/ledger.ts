import { describe, expect, it } from 'vitest';
import { OPERATOR_HOST } from '../helpers/app.ts';
import type { World } from './world.ts';
import { dereferenced } from '../helpers/openapi.ts';
import { ENTITIES } from './entity-rows.ts';

/**
 * Nothing lost, nothing leaked: what every sweep of the suite checks once it has run.
 *
 * The tables the API writes are held to exactly the rows the accepted (2xx) requests wrote: a row
 * that appeared must carry an id some accepted request of that tenant answered with (a role: the
 * name of an accepted PUT), and a row that left (deleted, or soft-deleted) must be one an accepted
 * DELETE of that tenant named. Side-effect tables (sessions, outbox, audit, throttling counters,
 * processed events, charges) are not counted but are scanned for rows naming another tenant.
 */
/** The tables of the hand-written routes; every entity's table joins them, derived (API_TABLES). */
const HAND_WRITTEN_TABLES: { table: string; key: string; scope: 'tenant' | 'global' }[] = [
  { table: 'files', key: 'id', scope: 'tenant' },
  { table: 'notifications', key: 'id', scope: 'tenant' },
  { table: 'roles', key: 'name', scope: 'tenant' },
  { table: 'tenants', key: 'id', scope: 'global' },
];
const API_TABLES: { table: string; key: string; scope: 'tenant' | 'global' }[] = [
  ...ENTITIES.map((entity) => ({ table: entity.names.table, key: 'id', scope: entity.scope })),
  ...HAND_WRITTEN_TABLES,
];

/** Rows an accepted request writes besides the one it answers with: at most one per such request. */
const SIDE_EFFECTS: { table: string; causedBy: string[] }[] = [
  { table: 'notifications', causedBy: ['task-task-assign'] },
];

type Snapshot = Map<string, Map<string, boolean>>; // table -> "tenant|key" -> live

async function hasColumn(world: World, table: string, column: string): Promise<boolean> {
  const { rows } = await world.app.services.db.pool.query(
    `select 1 from information_schema.columns where table_schema = 'public' and table_name = $1 and column_name = $2`,
    [table, column],
  );
  return rows.length > 0;
}

async function snapshot(world: World): Promise<Snapshot> {
  const out: Snapshot = new Map();
  for (const { table, key, scope } of API_TABLES) {
    const live = (await hasColumn(world, table, 'deleted_at')) ? 'deleted_at is null' : 'true';
    const tenant = scope === 'tenant' ? 'tenant_id::text' : `'global'`;
    const { rows } = await world.app.services.db.pool.query<{ k: string; live: boolean }>(
      `select ${tenant} || '|' || ${key}::text as k, ${live} as live from "${table}"`,
    );
    out.set(table, new Map(rows.map((r) => [r.k, r.live])));
  }
  return out;
}

export async function fetchDocument(world: World) {
  const res = await world.client.send({ method: 'GET', host: OPERATOR_HOST, path: '/api/v1/openapi.json' });
  if (res.status !== 200 || !res.json) throw new Error(`the OpenAPI document did not load: ${res.status}`);
  // Bodies and answers are named schemas: the suite reads them through their $refs.
  return (await dereferenced(res.json)) as never;
}

/**
 * The addresses of the world's people, per tenant. Addresses the sweeps generate are left out:
 * the same seed may well invent the same address in two tenants, which is no leak.
 */
function fixtureEmails(world: World): Map<string, string> {
  const out = new Map<string, string>();
  for (const t of world.tenants) {
    for (const a of t.actors) out.set(a.email.toLowerCase(), t.ref.id);
    out.set(`bootstrap@${t.ref.slug}.example.test`, t.ref.id);
  }
  return out;
}

/** Every UUID a text holds. */
const UUIDS = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

/**
 * Registers, after the sweep of the file that calls it, the three checks of "nothing lost,
 * nothing leaked". The snapshot is taken now (after the world's set-up, before the sweep).
 */
export async function nothingLostNothingLeaked(world: World, operationCount: () => number): Promise<void> {
  const before = await snapshot(world);
  const tenantOfHost = new Map(world.tenants.map((t) => [t.host, t.ref.id]));

  describe('nothing lost, nothing leaked (after the sweep)', () => {
    it('every tenant-owned table holds exactly the rows the accepted requests wrote', async () => {
      const after = await snapshot(world);
      // What the accepted writes answered with, per tenant ("global" for global tables).
      const created = new Set<string>();
      const deleted = new Set<string>();
      const causes = new Map<string, number>(); // "table|tenant" -> accepted requests that may add such a row
      let accepted = 0;
      for (const entry of world.client.transcript) {
        const { method, host, path } = entry.sent;
        if (entry.status >= 300 || !['POST', 'PUT', 'PATCH', 'DELETE'].includes(method)) continue;
        const tenant = tenantOfHost.get(host);
        if (!tenant) throw new Error(`an accepted write at a host the world does not know: ${method} ${host}${path}`);
        accepted++;
        const route = path.split('?')[0]!;
        const last = decodeURIComponent(route.split('/').pop()!);
        if (method === 'DELETE') {
          deleted.add(`${tenant}|${last}`).add(`global|${last}`);
          continue;
        }
        if (method === 'PUT' && route.startsWith('/api/v1/auth/roles/')) created.add(`${tenant}|${last}`);
        // The control plane writes inside the tenant its path names (the first administrator).
        const target =
          host === OPERATOR_HOST ? /^\/api\/v1\/tenant\/tenants\/([0-9a-f-]{36})\//.exec(route)?.[1] : undefined;
        for (const id of entry.text.match(UUIDS) ?? []) {
          created.add(`${tenant}|${id}`).add(`global|${id}`);
          if (target) created.add(`${target}|${id}`);
        }
        for (const effect of SIDE_EFFECTS) {
          if (effect.causedBy.includes(entry.sent.operationId ?? ''))
            causes.set(`${effect.table}|${tenant}`, (causes.get(`${effect.table}|${tenant}`) ?? 0) + 1);
        }
      }
      const problems: string[] = [];
      // A tenant an accepted request created comes with its seeded rows (roles admin and member).
      const newTenants = new Set(
        [...after.get('tenants')!.keys()].filter((k) => !before.get('tenants')!.has(k)).map((k) => k.split('|')[1]!),
      );
      for (const { table } of API_TABLES) {
        const was = before.get(table)!;
        const now = after.get(table)!;
        const effect = SIDE_EFFECTS.find((e) => e.table === table);
        const unexplained = new Map<string, number>();
        for (const [key, live] of now) {
          const tenant = key.split('|')[0]!;
          if (effect && !was.has(key) && !created.has(key)) {
            unexplained.set(tenant, (unexplained.get(tenant) ?? 0) + 1);
            continue;
          }
          if (!was.has(key) && !created.has(key) && !newTenants.has(tenant))
            problems.push(`${table} ${key} appeared, but no accepted request of that tenant wrote it`);
          if (was.get(key) === true && !live && !deleted.has(key))
            problems.push(`${table} ${key} was deleted, but no accepted DELETE of that tenant named it`);
        }
        for (const [tenant, count] of unexplained) {
          const allowed = causes.get(`${table}|${tenant}`) ?? 0;
          if (count > allowed)
            problems.push(
              `${table}: ${count} rows of ${tenant} appeared, but only ${allowed} accepted ${effect!.causedBy.join(' or ')} could write them`,
            );
        }
        for (const [key, live] of was)
          if (live && !now.has(key) && !deleted.has(key))
            problems.push(`${table} ${key} is gone, but no accepted DELETE of that tenant named it`);
      }
      for (const key of deleted) {
        const [tenant] = key.split('|');
        if (tenant === 'global') continue;
        const stillLive = API_TABLES.some(({ table }) => after.get(table)!.get(key) === true);
        if (stillLive) problems.push(`an accepted DELETE named ${key}, but the row is still live`);
      }
      console.log(`ledger: ${accepted} accepted writes over ${operationCount()} operations`);
      expect(problems).toEqual([]);
    });

    it("no row of one tenant names another tenant (its id, its rows' ids, its people's addresses)", async () => {
      const pool = world.app.services.db.pool;
      const { rows: tables } = await pool.query<{ table_name: string }>(
        `select table_name from information_schema.columns where table_schema = 'public' and column_name = 'tenant_id' and table_name not like 'pg%' order by 1`,
      );
      const owner = new Map<string, string>(); // uuid -> tenant id
      const all: { table: string; tenant: string; row: Record<string, unknown> }[] = [];
      for (const { table_name: table } of tables) {
        const { rows } = await pool.query(`select * from "${table}"`);
        for (const row of rows) {
          const tenant = String(row.tenant_id);
          all.push({ table, tenant, row });
          if (typeof row.id === 'string') owner.set(row.id, tenant);
        }
      }
      const { rows: tenants } = await pool.query<{ id: string }>('select id from tenants');
      for (const t of tenants) owner.set(t.id, t.id);
      const emails = fixtureEmails(world);
      const operatorUsers = new Set(
        all.filter((r) => r.table === 'users' && r.tenant === world.operator.ref.id).map((r) => String(r.row.id)),
      );
      const operatorId = world.operator.ref.id;
      const problems: string[] = [];
      for (const { table, tenant, row } of all) {
        // The control plane acting inside a tenant (its first administrator, a suspension) is
        // recorded there with the operator's person as the actor: the one reference allowed.
        const { tenant_id: _own, ...rest } = row;
        if (typeof rest.actor_id === 'string' && operatorUsers.has(rest.actor_id)) delete rest.actor_id;
        const text = JSON.stringify(rest, (_k, v: unknown) =>
          Buffer.isBuffer(v) ? v.toString('hex') : v,
        ).toLowerCase();
        for (const id of text.match(UUIDS) ?? []) {
          const named = owner.get(id);
          // The operator's control plane names the tenants it manages (their ids), nothing inside them.
          if (named && named !== tenant && !(tenant === operatorId && tenants.some((t) => t.id === id)))
            problems.push(`${table} row of ${tenant} names ${id} of tenant ${named}`);
        }
        for (const [email, of] of emails)
          if (of !== tenant && text.includes(email))
            problems.push(`${table} row of ${tenant} names ${email} of tenant ${of}`);
      }
      console.log(`rows scanned for other tenants' names: ${all.length} in ${tables.length} tables`);
      expect(problems.slice(0, 20)).toEqual([]);
    });

    it("no response body contains a password hash, a session id, a raw token, another tenant's id or another tenant's email", async () => {
      const pool = world.app.services.db.pool;
      const secrets: string[] = ['$argon2'];
      for (const t of world.tenants) for (const a of t.actors) secrets.push(a.rawSessionId);
      const { rows: hashes } = await pool.query<{ h: string; b: string }>(
        `select encode(id_hash, 'hex') as h, encode(id_hash, 'base64') as b from sessions union all select encode(token_hash, 'hex'), encode(token_hash, 'base64') from set_password_tokens`,
      );
      for (const { h, b } of hashes) secrets.push(h, b);
      const { rows: pw } = await pool.query<{ p: string }>(
        `select password_hash as p from users where password_hash is not null`,
      );
      for (const { p } of pw) secrets.push(p);
      // Personal access tokens: their hashes never leave, the raw tokens only in the answer that makes each.
      const { rows: tokenHashes } = await pool.query<{ h: string; b: string }>(
        `select encode(token_hash, 'hex') as h, encode(token_hash, 'base64') as b from access_tokens`,
      );
      for (const { h, b } of tokenHashes) secrets.push(h, b);
      const rawTokens = [
        ...world.tenants.flatMap((t) => [...t.actors.map((a) => a.token), t.expiredToken, t.revokedToken]),
      ];
      const makesToken = (sent: { method: string; path: string }, status: number) =>
        sent.method === 'POST' && sent.path === '/api/v1/auth/tokens' && status === 201;
      // Per tenant: its id, its rows' ids and its people's addresses.
      const names = new Map<string, Set<string>>();
      const add = (tenant: string, value: string) =>
        (names.get(tenant) ?? names.set(tenant, new Set()).get(tenant)!).add(value.toLowerCase());
      for (const t of world.tenants) add(t.ref.id, t.ref.id);
      const tenantTables = [
        ...ENTITIES.filter((entity) => entity.scope !== 'global').map((entity) => entity.names.table),
        ...['files', 'notifications', 'sessions'],
      ];
      for (const table of tenantTables) {
        const { rows } = await pool.query<{ tenant_id: string; id: string }>(`select tenant_id, id from "${table}"`);
        for (const r of rows) if (names.has(r.tenant_id)) add(r.tenant_id, r.id);
      }
      for (const [email, tenant] of fixtureEmails(world)) add(tenant, email);
      const problems: string[] = [];
      for (const entry of world.client.transcript) {
        const text = entry.text.toLowerCase();
        const where = `${entry.sent.operationId ?? ''} ${entry.sent.method} ${entry.sent.host}${entry.sent.path.slice(0, 120)} → ${entry.status}`;
        for (const s of secrets)
          if (s.length >= 8 && entry.text.includes(s)) problems.push(`${where}: carries a secret (${s.slice(0, 12)}…)`);
        if (!makesToken(entry.sent, entry.status))
          for (const s of rawTokens) if (entry.text.includes(s)) problems.push(`${where}: carries a raw access token`);
        const here = tenantOfHost.get(entry.sent.host);
        // The operator's control plane answers with the tenants it manages: their ids and first administrators.
        const controlPlane = entry.sent.host === OPERATOR_HOST && entry.sent.path.startsWith('/api/v1/tenant/');
        for (const [tenant, values] of names) {
          if (tenant === here || controlPlane) continue;
          for (const v of values) if (text.includes(v)) problems.push(`${where}: names ${v} of tenant ${tenant}`);
        }
      }
      console.log(`response bodies scanned: ${world.client.transcript.length}`);
      expect(problems.slice(0, 20)).toEqual([]);
    });
  });
}
