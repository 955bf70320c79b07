import pg from 'pg';

/** Far above what the bench writes: every limit is checked, none is reached. */
const LIMITS = {
  'user.seats': 1_000_000,
  'webhook.endpoints': 1_000,
  'token.active': 1_000_000,
  'file.storage_bytes': 1_000_000_000_000,
};

/**
 * Puts the bench tenant on a plan with every declared feature and a bound on every limit (`--plan`),
 * straight in the database as its owner, as the subscribe command would leave it (active, this
 * month's period): every request of the tenant then reads the subscription and the plan in its
 * opening statement, and a limited write counts under its lock.
 */
export async function subscribeBenchTenant(databaseUrl: string, tenantId: string, features: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('begin');
    await client.query(`select set_config('app.tenant_id', $1, true)`, [tenantId]);
    const plan = await client.query<{ id: string }>(
      `insert into plans (code, name, price, currency, interval, features, limits, active)
       values ('bench-plan-' || substr(md5(random()::text), 1, 8), 'Bench plan', 0, 'EUR', 'month', $1, $2, true)
       returning id`,
      [features, JSON.stringify(LIMITS)],
    );
    await client.query(
      `insert into subscriptions (tenant_id, plan_id, status, period_start, period_end, price, currency, anchor_day)
       values ($1, $2, 'active', now(), now() + interval '1 month', 0, 'EUR', extract(day from now())::int)`,
      [tenantId, plan.rows[0]!.id],
    );
    await client.query('commit');
  } finally {
    await client.end();
  }
}
