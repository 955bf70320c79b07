import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { APP_ROLE } from '../../framework/context/tx.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// One connection in the pool: every statement below, inside and after the transactions, runs on
// the same server session, so anything a transaction left behind would be visible.
let app: TestApp;
let a: TenantRef;
let b: TenantRef;
let loginUser: string;

beforeAll(async () => {
  app = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
  a = await createCustomer(app, 'tenant-a');
  b = await createCustomer(app, 'tenant-b');
  for (const [tenant, names] of [
    [a, ['a1', 'a2', 'a3']],
    [b, ['b1', 'b2']],
  ] as const) {
    await app.services.transactions.run(tenant, async (ctx) => {
      for (const name of names)
        await sql`insert into widgets (name, size, color) values (${name}, 1, 'red')`.execute(ctx.db);
    });
  }
  loginUser = new URL(app.databaseUrl).username;
});
afterAll(async () => {
  await app?.close();
});

interface SessionState {
  tenant: string | null;
  role: string;
  sessionUser: string;
  pid: number;
}

const STATE_SQL = `select current_setting('app.tenant_id', true) as tenant, current_user as role, session_user as "sessionUser", pg_backend_pid() as pid`;

async function stateOutside(): Promise<SessionState> {
  return (await app.services.db.pool.query<SessionState>(STATE_SQL)).rows[0]!;
}

describe('tenant transaction under row-level security (pool of size 1)', () => {
  it('the pool really has one connection', () => {
    expect(app.services.db.pool.options.max).toBe(1);
  });

  it('select * with no WHERE inside tenant A’s transaction returns only A’s rows', async () => {
    const rows = await app.services.transactions.run(
      a,
      async (ctx) => (await sql<{ name: string; tenant_id: string }>`select * from widgets`.execute(ctx.db)).rows,
    );
    expect(rows.map((r) => r.name).sort()).toEqual(['a1', 'a2', 'a3']);
    expect(new Set(rows.map((r) => r.tenant_id))).toEqual(new Set([a.id]));
    // The table does hold B's rows: the owner, outside any tenant, sees all five.
    const all = await app.services.db.pool.query('select count(*)::int as n from widgets');
    expect(all.rows[0].n).toBe(5);
  });

  it('updates and deletes without WHERE touch only A’s rows', async () => {
    const touched = await app.services.transactions.run(a, async (ctx) => {
      const updated = await sql`update widgets set size = size + 10`.execute(ctx.db);
      return Number(updated.numAffectedRows);
    });
    expect(touched).toBe(3);
    const sizes = await app.services.db.pool.query<{ tenant_id: string; size: number }>(
      'select tenant_id, size from widgets order by name',
    );
    for (const row of sizes.rows) expect(row.size).toBe(row.tenant_id === a.id ? 11 : 1);
    await expect(
      app.services.transactions.run(a, async (ctx) => {
        const deleted = await sql`delete from widgets`.execute(ctx.db);
        expect(Number(deleted.numAffectedRows)).toBe(3);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await app.services.db.pool.query('select count(*)::int as n from widgets')).rows[0].n).toBe(5);
  });

  it('a row inserted without tenant_id belongs to the transaction’s tenant', async () => {
    const row = await app.services.transactions.run(
      a,
      async (ctx) =>
        (
          await sql<{
            tenant_id: string;
          }>`insert into widgets (name, size, color) values ('a-default', 2, 'blue') returning tenant_id`.execute(
            ctx.db,
          )
        ).rows[0]!,
    );
    expect(row.tenant_id).toBe(a.id);
  });

  it('inserting a row for tenant B from A’s transaction is refused', async () => {
    const failure = await app.services.transactions
      .run(a, (ctx) =>
        sql`insert into widgets (tenant_id, name, size, color) values (${b.id}::uuid, 'smuggled', 1, 'red')`.execute(
          ctx.db,
        ),
      )
      .catch((err: unknown) => err as { code?: string; message: string });
    expect(failure).toMatchObject({ code: '42501' });
    expect((failure as Error).message).toMatch(/row-level security/);
    const { rows } = await app.services.db.pool.query(`select 1 from widgets where name = 'smuggled'`);
    expect(rows).toHaveLength(0);
  });

  it('moving one of A’s rows to tenant B is refused', async () => {
    await expect(
      app.services.transactions.run(a, (ctx) =>
        sql`update widgets set tenant_id = ${b.id}::uuid where name = 'a1'`.execute(ctx.db),
      ),
    ).rejects.toMatchObject({ code: '42501' });
  });

  it('the transaction runs as the restricted role with the tenant set; afterwards the connection carries neither', async () => {
    const before = await stateOutside();
    const inside = await app.services.transactions.run(
      a,
      async (ctx) => (await sql<SessionState>`${sql.raw(STATE_SQL)}`.execute(ctx.db)).rows[0]!,
    );
    const after = await stateOutside();
    expect(inside).toMatchObject({ tenant: a.id, role: APP_ROLE, sessionUser: loginUser });
    // Same server session before, inside and after: the pool has one connection.
    expect(inside.pid).toBe(before.pid);
    expect(after.pid).toBe(before.pid);
    expect([null, '']).toContain(after.tenant);
    expect(after.role).toBe(loginUser);
    // And with no tenant, the restricted role sees nothing at all.
    const client = await app.services.db.pool.connect();
    try {
      await client.query('begin');
      await client.query(`set local role ${APP_ROLE}`);
      expect((await client.query('select count(*)::int as n from widgets')).rows[0].n).toBe(0);
      await client.query('rollback');
    } finally {
      client.release();
    }
  });

  it('the transaction carries database.statement_timeout_ms, set by its opening statement; the connection itself keeps the server’s', async () => {
    const show = 'select current_setting($$statement_timeout$$) as t';
    const outsideBefore = (await app.services.db.pool.query<{ t: string }>(show)).rows[0]!.t;
    const inside = await app.services.transactions.run(
      a,
      async (ctx) => (await sql<{ t: string }>`${sql.raw(show)}`.execute(ctx.db)).rows[0]!.t,
    );
    const outsideAfter = (await app.services.db.pool.query<{ t: string }>(show)).rows[0]!.t;
    expect(inside).toBe(`${app.services.config.database.statement_timeout_ms / 1000}s`);
    // Never a start-up parameter: a pooler in transaction mode refuses one (or drops it).
    expect(outsideBefore).toBe('0');
    expect(outsideAfter).toBe('0');
  });

  it('a transaction that fails also leaves the connection with no tenant and no role', async () => {
    const before = await stateOutside();
    await expect(
      app.services.transactions.run(b, async (ctx) => {
        await sql`select 1/0`.execute(ctx.db);
      }),
    ).rejects.toThrow(/division by zero/);
    const after = await stateOutside();
    expect(after.pid).toBe(before.pid);
    expect([null, '']).toContain(after.tenant);
    expect(after.role).toBe(loginUser);
  });

  it('B’s transaction right after A’s on the same connection sees only B’s rows', async () => {
    await app.services.transactions.run(a, (ctx) => sql`select 1`.execute(ctx.db));
    const names = await app.services.transactions.run(b, async (ctx) =>
      (await sql<{ name: string }>`select name from widgets order by name`.execute(ctx.db)).rows.map((r) => r.name),
    );
    expect(names).toEqual(['b1', 'b2']);
  });

  it('the restricted role cannot switch row-level security off', async () => {
    await expect(
      app.services.transactions.run(a, async (ctx) => {
        await sql`set local row_security = off`.execute(ctx.db);
        await sql`select * from widgets`.execute(ctx.db);
      }),
    ).rejects.toThrow(/row-level security/);
  });
});

describe('the restricted role and the tenant-owned tables', () => {
  it(`${APP_ROLE} is no superuser, cannot bypass RLS, cannot log in and owns nothing`, async () => {
    const { rows } = await app.services.db.pool.query(
      `select rolsuper, rolbypassrls, rolcanlogin, rolcreaterole, rolcreatedb,
              (select count(*)::int from pg_class c where c.relowner = r.oid) as owned
         from pg_roles r where rolname = $1`,
      [APP_ROLE],
    );
    expect(rows).toEqual([
      { rolsuper: false, rolbypassrls: false, rolcanlogin: false, rolcreaterole: false, rolcreatedb: false, owned: 0 },
    ]);
  });

  it('every table with row-level security forced follows the tenant-owned table rules', async () => {
    const { rows: tables } = await app.services.db.pool.query<{ name: string }>(
      `select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r' and c.relforcerowsecurity order by 1`,
    );
    const names = tables.map((t) => t.name);
    // The framework's, the modules' and the test kit's tenant-owned tables are among them.
    expect(names).toEqual(
      expect.arrayContaining([
        'audit_events',
        'processed_events',
        'idempotency_keys',
        'users',
        'roles',
        'sessions',
        'widgets',
      ]),
    );
    for (const table of names) {
      const column = await app.services.db.pool.query<{ notnull: boolean; def: string | null }>(
        `select a.attnotnull as notnull, pg_get_expr(d.adbin, d.adrelid) as def
           from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
          where a.attrelid = $1::regclass and a.attname = 'tenant_id'`,
        [table],
      );
      expect(column.rows, `${table}.tenant_id`).toEqual([{ notnull: true, def: 'app_tenant_id()' }]);
      const policies = await app.services.db.pool.query<{
        name: string;
        qual: string;
        with_check: string;
        cmd: string;
        roles: string[];
      }>(
        `select policyname as name, qual, with_check, cmd, roles::text[] as roles from pg_policies where schemaname = 'public' and tablename = $1 order by 1`,
        [table],
      );
      const isolation = policies.rows
        .filter((p) => p.name !== 'cross_tenant_read')
        .map(({ qual, with_check }) => ({ qual, with_check }));
      expect(isolation, `${table} policy`).toEqual([
        { qual: '(tenant_id = app_tenant_id())', with_check: '(tenant_id = app_tenant_id())' },
      ]);
      // The one other policy allowed: every tenant's rows readable by the owner of cross-tenant functions, and only that.
      for (const other of policies.rows.filter((p) => p.name === 'cross_tenant_read')) {
        expect(other, `${table} cross_tenant_read`).toMatchObject({
          cmd: 'SELECT',
          roles: ['tenantry_cross_tenant'],
          with_check: null,
        });
      }
      const indexes = await app.services.db.pool.query<{
        name: string;
        first: string;
        unique: boolean;
        primary: boolean;
        columns: number;
      }>(
        `select ic.relname as name, a.attname as first, i.indisunique as unique, i.indisprimary as primary, i.indnkeyatts::int as columns
           from pg_index i join pg_class ic on ic.oid = i.indexrelid
           left join pg_attribute a on a.attrelid = i.indrelid and a.attnum = i.indkey[0]
          where i.indrelid = $1::regclass`,
        [table],
      );
      for (const index of indexes.rows) {
        // A single-column surrogate primary key (a random uuid) is globally unique by construction.
        const surrogateKey = index.primary && index.columns === 1 && index.first === 'id';
        if (surrogateKey) continue;
        expect(index.first, `${table}: index ${index.name} leads with tenant_id`).toBe('tenant_id');
      }
    }
  });

  it('every table holding a tenant_id has row-level security on, unless it is global by design', async () => {
    const { rows } = await app.services.db.pool.query<{ name: string; rls: boolean; readable: boolean }>(
      `select c.relname as name, c.relrowsecurity as rls, has_table_privilege($1, c.oid, 'select') as readable
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind = 'r'
          and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped)
        order by 1`,
      [APP_ROLE],
    );
    // tenant_hosts maps hosts to tenants before any tenant is known; the restricted role cannot read dead letters.
    const exposed = rows.filter((r) => !r.rls && r.readable && r.name !== 'tenant_hosts');
    expect(exposed).toEqual([]);
  });
});
