import pg from 'pg';
import { hashPassword } from '../../modules/user/passwords.ts';

/** The baseline's copies of the first tenant's tasks and users (list-filtered scenario). */
export const BASELINE_TASKS = 'bench_baseline_tasks';
export const BASELINE_USERS = 'bench_baseline_users';
/** The role the list-filtered scenario signs in with: the task list and the users it expands. */
export const TASKS_ROLE = 'bench-tasks';
/** People the seeded tasks are assigned to; one task in ASSIGNEES + 1 has nobody (its expansion is null). */
const ASSIGNEES = 20;

export interface TaskSeed {
  /** Signs in with the bench password, holding task:read and user:read through TASKS_ROLE. */
  email: string;
  tasks: number;
  /** Tasks open or acknowledged whose deadline has passed, and of those, of priority high or critical. */
  overdue: number;
  asked: number;
}

/**
 * The tasks as a tenant's years of work look, as test/modules/task/task-list-plan.test.ts seeds
 * them: deadlines from 400 days ago to 100 days ahead in the order the tasks were made; of what was
 * due more than 30 days ago, 1 in 25 is still open or acknowledged and the rest finished; the last
 * 30 days and the next 100 mixed. A task whose deadline passed while it is not finished is already
 * marked as a breach, as the SLA sweep would have marked it: the sweep finds nothing to write
 * during the run. Ids are time-ordered (as the service's UUIDv7), so a million rows go into the
 * primary key's index in order. Parameters: $1 the number of tasks, $2 the assignees' ids.
 */
const TASKS_SQL = `insert into tasks (id, title, status, priority, deadline, assignee_id, sla_breached, created_at, updated_at)
  select (left(app_tenant_id()::text, 8) || '-0000-7000-8001-' || lpad(to_hex(i), 12, '0'))::uuid, 'task ' || i, s.status,
         (array['low', 'medium', 'high', 'critical'])[1 + i % 4], t.d,
         case when i % ${ASSIGNEES + 1} = 0 then null else ($2::uuid[])[1 + i % ${ASSIGNEES}] end,
         t.d < now() and s.status not in ('resolved', 'closed'), t.d - interval '14 days', t.d - interval '14 days'
    from generate_series(1, $1::int) as i,
         lateral (select now() - interval '400 days' + (i * interval '500 days') / $1::int as d) as t,
         lateral (select case when i % 50 = 0 then 'open' when i % 50 = 25 then 'acknowledged'
                              when t.d < now() - interval '30 days' then (array['resolved', 'closed'])[1 + i % 2]
                              else (array['open', 'acknowledged', 'in_progress', 'resolved', 'closed'])[1 + i % 5] end as status) as s`;

/**
 * Seeds the list-filtered scenario in the first tenant, on both sides: `count` tasks assigned
 * among ASSIGNEES people, and a user holding TASKS_ROLE, in the service's tables (as their owner,
 * the tenant set for row-level security); then the baseline's tables, copies of tasks and users
 * (`like … including defaults including indexes`: same columns and indexes, no row-level security)
 * holding the tenant's rows as they are, so both sides list the same rows. Every table is
 * vacuum-analysed, as a table that has lived a while has fresh statistics and visibility map.
 */
export async function seedTasks(
  databaseUrl: string,
  tenantId: string,
  options: { count: number; runId: string; password: string },
): Promise<TaskSeed> {
  const email = `bench-tasks-${options.runId}@example.test`;
  const hash = await hashPassword(options.password);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('begin');
    await client.query('set local statement_timeout = 0');
    await client.query(`select set_config('app.tenant_id', $1, true)`, [tenantId]);
    await client.query('insert into roles (name, permissions) values ($1, $2)', [
      TASKS_ROLE,
      ['task:read', 'user:read'],
    ]);
    await client.query(
      `insert into users (email, display_name, status, roles, password_hash) values ($1, 'Bench tasks', 'active', $2, $3)`,
      [email, [TASKS_ROLE], hash],
    );
    const assignees = await client.query<{ id: string }>(
      `insert into users (email, display_name, status, roles)
         select 'assignee-' || k || '-' || $1 || '@example.test', 'Assignee ' || k, 'active', '{}'
           from generate_series(1, ${ASSIGNEES}) as k
       returning id`,
      [options.runId],
    );
    await client.query(TASKS_SQL, [options.count, assignees.rows.map((r) => r.id)]);
    const { rows } = await client.query<{ overdue: number; asked: number }>(
      `select count(*) filter (where status in ('open', 'acknowledged') and deadline < now())::int as overdue,
              count(*) filter (where status in ('open', 'acknowledged') and deadline < now() and priority in ('high', 'critical'))::int as asked
         from tasks`,
    );
    for (const [copy, table] of [
      [BASELINE_TASKS, 'tasks'],
      [BASELINE_USERS, 'users'],
    ] as const) {
      await client.query(`drop table if exists ${copy}`);
      await client.query(`create table ${copy} (like ${table} including defaults including indexes)`);
      await client.query(`insert into ${copy} select * from ${table}`);
    }
    await client.query('commit');
    for (const table of ['tasks', 'users', BASELINE_TASKS, BASELINE_USERS])
      await client.query(`vacuum analyze ${table}`);
    return { email, tasks: options.count, overdue: rows[0]!.overdue, asked: rows[0]!.asked };
  } catch (err) {
    await client.query('rollback').catch(() => {});
    throw err;
  } finally {
    await client.end();
  }
}
