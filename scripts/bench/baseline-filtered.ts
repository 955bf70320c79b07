import type { Pool } from 'pg';
import { KeysetPager, type ListPlace } from '../../framework/operations/paging.ts';
import { BASELINE_TASKS, BASELINE_USERS } from './tasks-seed.ts';

/**
 * The baseline's side of the list-filtered scenario (scripts/bench/list-filtered.ts): the one
 * statement the service runs for
 * `status=in.(open,acknowledged)&deadline=lt.now&priority=gte.high&expand=assignee&sort=-priority,deadline`
 * (the task list as one exchange, framework/operations/entity-exchanges.ts), built by the same
 * pager over the baseline's copies of tasks and users, with the tenant as a where term instead of
 * row-level security (on the expanded user too) and no permission guard. Its conditions and the
 * expansion are written as framework/query/compile.ts writes them: an enum's range as
 * `= any(<its values>)`, `now` as a parameter, the assignee as a JSON array of the user's columns
 * read in the same statement. The answer keeps what `fields=title,deadline,assignee.displayName`
 * keeps, as the service's does.
 */

const TASK_COLUMNS = [
  'id',
  'created_at',
  'updated_at',
  'title',
  'description',
  'status',
  'priority',
  'deadline',
  'assignee_id',
  'sla_breached',
  'resolved_at',
  'resolution',
];
const USER_COLUMNS = ['id', 'created_at', 'updated_at', 'email', 'display_name', 'status', 'roles'];
const DISPLAY_NAME = USER_COLUMNS.indexOf('display_name');
const PRIORITIES = ['low', 'medium', 'high', 'critical'];
const SORT = '-priority,deadline';
const LIMIT = 20;

const quote = (column: string) => `"${column}"`;
const expansion = `(select json_build_array(${USER_COLUMNS.map((c) => `x.${quote(c)}`).join(', ')}) from ${BASELINE_USERS} x where x."id" = "${BASELINE_TASKS}"."assignee_id" and deleted_at is null and x."tenant_id" = $1) as "__x_assignee"`;

const pager = new KeysetPager({
  select: TASK_COLUMNS.map(quote).join(', '),
  from: `"${BASELINE_TASKS}"`,
  id: 'id',
  where: ['deleted_at is null'],
  sorts: {
    priority: { column: `(case "priority" ${PRIORITIES.map((p, i) => `when '${p}' then ${i}`).join(' ')} end)` },
    deadline: { column: '"deadline"' },
  },
});
const CONDITIONS = [
  'tenant_id = $1',
  '"status" = any($2::text[])',
  '"deadline" < $3::timestamptz',
  '"priority" = any($4::text[])',
];

type Row = Record<string, unknown>;

/** The first page of the filtered, sorted, expanded task list, as the service answers it. */
export async function filteredTasks(pool: Pool, tenantId: string, place: ListPlace): Promise<unknown> {
  const filter = {
    conditions: CONDITIONS,
    params: [tenantId, ['open', 'acknowledged'], new Date(), PRIORITIES.slice(PRIORITIES.indexOf('high'))],
    columns: [expansion],
    varies: true,
  };
  const query = { limit: LIMIT, offset: 0, sort: SORT };
  const { text, params, walk } = pager.statement(query, filter, place);
  const { rows } = await pool.query<Row>(text, params);
  return pager.answer(
    rows,
    query,
    walk,
    () => Promise.reject(new Error('a first page counts in its own statement')),
    (row) => {
      const user = row.__x_assignee as unknown[] | null;
      return {
        id: row.id,
        title: row.title,
        deadline: row.deadline,
        assignee: user ? { id: user[0], displayName: user[DISPLAY_NAME] } : null,
      };
    },
  );
}
