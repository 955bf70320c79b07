import pg from 'pg';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { SEEDED_ROLES } from '../../framework/tenancy/create-tenant.ts';

/** The bench tenants are bt-1 ... bt-N, each served on bt-<i>.bench.localhost. */
export const tenantSlug = (i: number) => `bt-${i}`;
export const tenantHost = (i: number) => `${tenantSlug(i)}.bench.localhost`;
const SEED_BATCH = 1000;
export const TASKS_PER_TENANT = 10;
export const PAST_DEADLINE_PER_TENANT = 3;

/** What a stage made due (TenantSeeder.makeDue): each job's check is measured against it. */
export interface DueState {
  /** Bench subscriptions whose period is over. */
  subscriptions: number;
  /** Expired sessions and spent set-password tokens, for auth-sweep. */
  sessions: number;
  tokens: number;
  /** Tasks past their deadline and not marked, for task-sla-sweep. */
  overdueTasks: number;
}

/**
 * Seeds with set-based statements, a batch of 1,000 tenants per transaction, on a connection that
 * may bypass row-level security (the bench database's owner, a superuser). Tenants and hosts go
 * through the control plane's own function (tenant_create, with the transaction acting for the
 * operator tenant, which is what it checks); the rows of each tenant are written in one statement
 * per table for the whole batch. Seeding 10,000 tenants takes seconds, not the hours one
 * createTenant transaction per tenant over HTTP would.
 */
export class TenantSeeder {
  private readonly client: pg.Client;
  private operatorId = '';
  seeded = 0;

  private constructor(client: pg.Client) {
    this.client = client;
  }

  static async open(url: string): Promise<TenantSeeder> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const seeder = new TenantSeeder(client);
    const { rows } = await client.query<{ id: string }>('select id from tenants where is_operator');
    seeder.operatorId = rows[0]!.id;
    const found = await client.query<{ n: string }>(`select count(*) as n from tenants where slug like 'bt-%'`);
    seeder.seeded = Number(found.rows[0]!.n);
    await client.query(
      `insert into plans (code, name, price, currency, interval, active) values ('bench-monthly', 'Bench monthly', 1000, 'EUR', 'month', true)
       on conflict (code) where deleted_at is null do nothing`,
    );
    return seeder;
  }

  async close(): Promise<void> {
    await this.client.end();
  }

  /** Grows the bench tenants to `size`, each with its host, seeded roles, admin, subscription, tasks, sessions and tokens. */
  async growTo(size: number): Promise<void> {
    while (this.seeded < size) {
      const from = this.seeded + 1;
      const to = Math.min(size, this.seeded + SEED_BATCH);
      await this.inTransaction(async () => {
        await this.client.query(`select set_config('app.tenant_id', $1, true)`, [this.operatorId]);
        await this.client.query(
          `select tenant_create(gen_random_uuid(), 'bt-' || i, 'Bench tenant ' || i, 'bt-' || i || '.bench.localhost', false) from generate_series($1::int, $2::int) i`,
          [from, to],
        );
        const batch = `(select id from tenants where slug = any (array(select 'bt-' || i from generate_series($1::int, $2::int) i)))`;
        await this.client.query(
          `insert into roles (tenant_id, name, permissions)
             select t.id, r.name, r.permissions from ${batch} t
               cross join (select key as name, array(select jsonb_array_elements_text(value)) as permissions from jsonb_each($3::jsonb)) r`,
          [from, to, JSON.stringify(SEEDED_ROLES)],
        );
        await this.client.query(
          `insert into users (tenant_id, email, display_name, status, roles)
             select t.id, 'admin@' || tn.slug || '.test', 'Admin', 'active', '{admin}' from ${batch} t join tenants tn on tn.id = t.id`,
          [from, to],
        );
        await this.client.query(
          `insert into subscriptions (tenant_id, plan_id, status, period_start, period_end, price, currency, anchor_day)
             select t.id, p.id, 'active', now() - interval '1 month', now() - interval '1 minute', p.price, p.currency, extract(day from now() - interval '1 minute')::int
               from ${batch} t cross join (select * from plans where code = 'bench-monthly' and deleted_at is null) p`,
          [from, to],
        );
        // Ten tasks each, the first three past their deadline.
        await this.client.query(
          `insert into tasks (tenant_id, title, priority, deadline, created_at)
             select t.id, 'Task ' || k, 'medium', case when k <= $3 then now() - interval '1 hour' else now() + interval '7 days' end, now() - make_interval(secs => k)
               from ${batch} t cross join generate_series(1, $4::int) k`,
          [from, to, PAST_DEADLINE_PER_TENANT, TASKS_PER_TENANT],
        );
      });
      this.seeded = to;
    }
  }

  /**
   * Makes every bench tenant's work due again before a measurement, set-based, and returns what it
   * set: the subscription's period over (a new period start, so a new charge key; active, nothing
   * pending, cancelled or ended, whatever an earlier stage left), the overdue tasks not yet marked,
   * three expired sessions and two spent set-password tokens per bench user. The stage's checks
   * compare with this, and their premises are checked against it before each job runs.
   */
  async makeDue(): Promise<DueState> {
    const made: DueState = { subscriptions: 0, sessions: 0, tokens: 0, overdueTasks: 0 };
    await this.inTransaction(async () => {
      const subscriptions = await this.client.query(
        `update subscriptions s set period_start = now() - interval '1 month', period_end = now() - interval '1 minute', status = 'active',
             attempt_count = 0, past_due_since = null, pending_plan_id = null, cancel_at_period_end = false, ended_at = null
           from tenants t where t.id = s.tenant_id and t.slug like 'bt-%' and s.deleted_at is null`,
      );
      made.subscriptions = subscriptions.rowCount ?? 0;
      await this.client.query(`update tasks set sla_breached = false where sla_breached`);
      const sessions = await this.client.query(
        `insert into sessions (tenant_id, id_hash, user_id, expires_at)
           select u.tenant_id, sha256(convert_to(gen_random_uuid()::text, 'UTF8')), u.id, now() - interval '1 day'
             from users u join tenants t on t.id = u.tenant_id and t.slug like 'bt-%' cross join generate_series(1, 3)`,
      );
      made.sessions = sessions.rowCount ?? 0;
      const tokens = await this.client.query(
        `insert into set_password_tokens (tenant_id, user_id, token_hash, expires_at, used_at)
           select u.tenant_id, u.id, sha256(convert_to(gen_random_uuid()::text, 'UTF8')), now() + interval '1 day', now() - interval '1 hour'
             from users u join tenants t on t.id = u.tenant_id and t.slug like 'bt-%' cross join generate_series(1, 2)`,
      );
      made.tokens = tokens.rowCount ?? 0;
    });
    made.overdueTasks = (await this.sweepCheck()).unmarked;
    await this.client.query(
      'vacuum analyze tenants, tenant_hosts, users, subscriptions, tasks, sessions, set_password_tokens',
    );
    return made;
  }

  /** A session of a user holding admin in the tenant (`operator` or bench tenant i): the raw cookie value. */
  async adminSession(tenant: 'operator' | number): Promise<string> {
    const raw = `bench-${tenant}-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
    await this.inTransaction(async () => {
      const { rows } = await this.client.query<{ id: string }>(
        tenant === 'operator' ? 'select id from tenants where is_operator' : 'select id from tenants where slug = $1',
        tenant === 'operator' ? [] : [tenantSlug(tenant)],
      );
      const tenantId = rows[0]!.id;
      const user = await this.client.query<{ id: string }>(
        `insert into users (tenant_id, email, display_name, status, roles) values ($1, $2, 'Bench operator', 'active', '{admin}')
         on conflict (tenant_id, lower(email)) where deleted_at is null do update set status = 'active' returning id`,
        [tenantId, `bench-admin-${tenant}@example.test`],
      );
      await this.client.query(
        `insert into sessions (tenant_id, id_hash, user_id, expires_at) values ($1, $2, $3, now() + interval '1 day')`,
        [tenantId, hashSecret(raw), user.rows[0]!.id],
      );
    });
    return raw;
  }

  /** The served tenants: each fan-out queues one run for each (the bench tenants and the operator). */
  async servedTenants(): Promise<number> {
    const { rows } = await this.client.query<{ n: string }>(
      `select count(*) as n from tenants where status = 'active'`,
    );
    return Number(rows[0]!.n);
  }

  /** Bench subscriptions due, bench subscriptions not due, and tenants charged more than once for a period. */
  async billingCheck(): Promise<{ due: number; doubleCharged: number; renewed: number }> {
    const { rows } = await this.client.query<{ due: string; renewed: string; double: string }>(
      `select (select count(*) from subscriptions s join tenants t on t.id = s.tenant_id and t.slug like 'bt-%' where s.period_end <= now() and s.ended_at is null and s.deleted_at is null) as due,
              (select count(*) from subscriptions s join tenants t on t.id = s.tenant_id and t.slug like 'bt-%' where s.period_end > now() and s.ended_at is null and s.deleted_at is null) as renewed,
              (select count(*) from (select tenant_id, period_start from billing_charges where outcome = 'settled' group by 1, 2 having count(*) > 1) d) as double`,
    );
    return { due: Number(rows[0]!.due), renewed: Number(rows[0]!.renewed), doubleCharged: Number(rows[0]!.double) };
  }

  /** What the sweeps left: expired sessions, spent tokens, overdue unmarked tasks. */
  async sweepCheck(): Promise<{ sessions: number; tokens: number; unmarked: number; marked: number }> {
    const { rows } = await this.client.query<{ sessions: string; tokens: string; unmarked: string; marked: string }>(
      `select (select count(*) from sessions where expires_at <= now()) as sessions,
              (select count(*) from set_password_tokens where used_at is not null) as tokens,
              (select count(*) from tasks where deadline <= now() and not sla_breached and status not in ('resolved', 'closed') and deleted_at is null) as unmarked,
              (select count(*) from tasks where sla_breached) as marked`,
    );
    const r = rows[0]!;
    return {
      sessions: Number(r.sessions),
      tokens: Number(r.tokens),
      unmarked: Number(r.unmarked),
      marked: Number(r.marked),
    };
  }

  private async inTransaction(fn: () => Promise<void>): Promise<void> {
    await this.client.query('begin');
    try {
      await fn();
      await this.client.query('commit');
    } catch (err) {
      await this.client.query('rollback');
      throw err;
    }
  }
}
