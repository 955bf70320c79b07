import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../helpers/app.ts';

/**
 * Issue 48, point 1: GET <list>/summary counts the rows its list answers, per group, with sums,
 * averages, minimums and maximums, date buckets in a zone, at most 1,000 groups, row access and
 * the read permission; over HTTP, against rows seeded by SQL.
 */

const t = useTestApp({ customers: ['acme'] });
const HOST = 'acme.localhost';
const TASKS = '/api/v1/task/tasks';
const WIDGETS = '/api/v1/testkit/widgets';
const MEMOS = '/api/v1/testkit/memos';
let reader: SignedIn;
let other: SignedIn;
let stranger: SignedIn;

const STATUSES = ['open', 'acknowledged', 'in_progress', 'resolved', 'closed'];
const PRIORITIES = ['low', 'medium', 'high', 'critical'];

const sql = (text: string, params: unknown[] = []) =>
  t.app.services.transactions.run(t.acme, (ctx) => ctx.db.executeQuery(CompiledQuery.raw(text, params)));

beforeAll(async () => {
  reader = await signInAs(t.app, t.acme, ['task:read', 'widget:read', 'widget:write']);
  other = await signInAs(t.app, t.acme, ['widget:read', 'widget:write']);
  stranger = await signInAs(t.app, t.acme, ['widget:read']);
  // 50 tasks: status and priority cycle at different rates, deadlines one per 7 hours from 1 March 2031.
  await sql(
    `insert into tasks (title, status, priority, deadline)
     select 'task ' || i, ($1::text[])[1 + i % 5], ($2::text[])[1 + (i * 7) % 4],
            timestamptz '2031-03-01T00:00:00Z' + (i * 7) * interval '1 hour'
       from generate_series(1, 50) i`,
    [STATUSES, PRIORITIES],
  );
  // Widgets: sizes 1..10 in color "sum"; 1,005 more of color "many", each its own name.
  await sql(
    `insert into widgets (name, size, color, approved, approved_at)
     select 'w' || i, i, 'sum', i % 2 = 0, case when i % 2 = 0 then timestamptz '2031-01-01T00:00:00Z' + i * interval '1 day' end
       from generate_series(1, 10) i`,
  );
  await sql(
    `insert into widgets (name, size, color) select 'many ' || i, i % 1000, 'many' from generate_series(1, 1005) i`,
  );
  // Memos: three of the reader's, two of the other's.
  await sql(`insert into memos (owner_id, text) values ($1, 'a'), ($1, 'b'), ($1, 'c'), ($2, 'd'), ($2, 'e')`, [
    reader.userId,
    other.userId,
  ]);
});

const get = async (path: string, who: SignedIn = reader) => t.app.http(HOST).get(path).set('Cookie', who.cookie);

const summary = async (path: string, who: SignedIn = reader) => {
  const res = await get(path, who);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body as { groups: Record<string, unknown>[]; total: number; truncated: boolean };
};

const listTotal = async (query: string) => {
  const res = await get(`${TASKS}?${query}&limit=1`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.total as number;
};

describe('a summary counts what the list answers', () => {
  it('50 tasks by status: each count is the total of the list filtered by that status', async () => {
    const answer = await summary(`${TASKS}/summary?groupBy=status`);
    expect(answer.total).toBe(50);
    expect(answer.truncated).toBe(false);
    // An enum's groups come in its declared order.
    expect(answer.groups.map((g) => g.status)).toEqual(STATUSES);
    for (const group of answer.groups) {
      expect(group.count).toBe(await listTotal(`status=eq.${group.status}`));
    }
    expect(answer.groups.reduce((n, g) => n + (g.count as number), 0)).toBe(50);
  });

  it('takes the list filters: by status and priority among the high and critical ones', async () => {
    const answer = await summary(`${TASKS}/summary?groupBy=status,priority&priority=gte.high`);
    expect(answer.total).toBe(await listTotal('priority=gte.high'));
    for (const group of answer.groups) {
      expect(['high', 'critical']).toContain(group.priority);
      expect(group.count).toBe(await listTotal(`status=eq.${group.status}&priority=eq.${group.priority}`));
    }
    const or = await summary(`${TASKS}/summary?or=(status.eq.open,status.eq.closed)`);
    expect(or.groups).toEqual([{ count: 20 }]);
    expect(or.total).toBe(await listTotal('or=(status.eq.open,status.eq.closed)'));
  });

  it('answers no group and a total of 0 when nothing matches', async () => {
    expect(await summary(`${TASKS}/summary?groupBy=status&title=eq.nothing`)).toEqual({
      groups: [],
      total: 0,
      truncated: false,
    });
  });
});

describe('sums, averages, minimums and maximums', () => {
  it('of an integer field and a date-time field, per group', async () => {
    const answer = await summary(
      `${WIDGETS}/summary?color=eq.sum&groupBy=approved&sum=size&avg=size&min=size,approvedAt&max=size,approvedAt`,
    );
    expect(answer.total).toBe(10);
    const byApproved = Object.fromEntries(answer.groups.map((g) => [String(g.approved), g]));
    expect(byApproved.true).toEqual({
      approved: true,
      count: 5,
      sum: { size: 30 },
      avg: { size: 6 },
      min: { size: 2, approvedAt: '2031-01-03T00:00:00.000Z' },
      max: { size: 10, approvedAt: '2031-01-11T00:00:00.000Z' },
    });
    // Rows without a value are left out of the aggregate: none has one, so null.
    expect(byApproved.false).toMatchObject({ count: 5, sum: { size: 25 }, min: { approvedAt: null } });
  });

  it('refuses a field the aggregate does not take', async () => {
    const res = await get(`${WIDGETS}/summary?sum=name`);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(res.body.errors[0]).toMatchObject({ pointer: '/querystring/sum', message: /sum takes size/ });
    const avgDate = await get(`${WIDGETS}/summary?avg=approvedAt`);
    expect(avgDate.status).toBe(422);
  });
});

describe('date-time buckets', () => {
  it('by day in UTC, and in the zone tz names', async () => {
    const utc = await summary(`${TASKS}/summary?groupBy=deadline:day`);
    // Deadlines every 7 hours from 1 March 07:00 UTC to 15 March 14:00 UTC.
    expect(utc.groups[0]).toEqual({ deadline: '2031-03-01', count: 3 });
    expect(utc.groups.reduce((n, g) => n + (g.count as number), 0)).toBe(50);
    // In Auckland (UTC+13 in March) 1 March 14:00 and 21:00 UTC fall on 2 March.
    const auckland = await summary(`${TASKS}/summary?groupBy=deadline:day&tz=Pacific/Auckland`);
    expect(auckland.groups[0]).toEqual({ deadline: '2031-03-01', count: 1 });
    expect(auckland.groups[1]).toMatchObject({ deadline: '2031-03-02' });
  });

  it('by week (from Monday) and by month, with another field', async () => {
    const weeks = await summary(`${TASKS}/summary?groupBy=deadline:week`);
    // 1 March 2031 is a Saturday: its week began on Monday 24 February.
    expect(weeks.groups.map((g) => g.deadline)).toEqual(['2031-02-24', '2031-03-03', '2031-03-10']);
    const months = await summary(`${TASKS}/summary?groupBy=deadline:month,status`);
    expect(months.groups).toHaveLength(5);
    expect(months.groups.every((g) => g.deadline === '2031-03-01')).toBe(true);
  });

  it('refuses a zone that is none (422), and a date-time without a bucket', async () => {
    const zone = await get(`${TASKS}/summary?groupBy=deadline:day&tz=Mars/Olympus_Mons`);
    expect(zone.status).toBe(422);
    expect(zone.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(zone.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(zone.body.errors[0]).toMatchObject({ pointer: '/querystring/tz' });
    const bare = await get(`${TASKS}/summary?groupBy=deadline`);
    expect(bare.status).toBe(422);
    expect(bare.body.errors[0].message).toMatch(/deadline:day/);
  });
});

describe('a UTC offset is no IANA zone', () => {
  it('refuses tz=+05:00 and its like (422), which PostgreSQL would read the POSIX way, five hours west', async () => {
    // Node's Intl takes an offset as a zone; PostgreSQL's "at time zone '+05:00'" is UTC-5, so the
    // buckets would be cut ten hours from where the caller asked. Etc/GMT-5 is the IANA name of UTC+5.
    // %E2%88%92 is U+2212, the minus sign, which Intl reads as -.
    for (const tz of ['%2B05:00', '-03:30', '%2B0530', '%2B05', '-05', '%E2%88%9205:00']) {
      const res = await get(`${TASKS}/summary?groupBy=deadline:day&tz=${tz}`);
      expect(res.status, `tz=${tz}: ${JSON.stringify(res.body)}`).toBe(422);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED' });
      expect(res.body.errors[0]).toMatchObject({ pointer: '/querystring/tz', message: /IANA/ });
    }
    // 1 March 07:00, 14:00 and 21:00 UTC: in UTC+5 the third falls on 2 March.
    const east = await summary(`${TASKS}/summary?groupBy=deadline:day&tz=Etc/GMT-5`);
    expect(east.groups[0]).toEqual({ deadline: '2031-03-01', count: 2 });
  });
});

describe('bounds', () => {
  it('answers at most 1,000 groups, truncated true when there are more', async () => {
    const answer = await summary(`${WIDGETS}/summary?color=eq.many&groupBy=name`);
    expect(answer.groups).toHaveLength(1000);
    expect(answer.truncated).toBe(true);
    expect(answer.total).toBe(1005);
    const fewer = await summary(`${WIDGETS}/summary?color=eq.many&groupBy=size`);
    expect(fewer.groups).toHaveLength(1000);
    expect(fewer.truncated).toBe(false);
  });
});

describe('who sees what', () => {
  it('counts owner-only rows for their owner only', async () => {
    expect((await summary(`${MEMOS}/summary`, reader)).total).toBe(3);
    expect((await summary(`${MEMOS}/summary?groupBy=pinned`, other)).groups).toEqual([{ pinned: false, count: 2 }]);
    expect((await summary(`${MEMOS}/summary`, stranger)).total).toBe(0);
  });

  it('needs the list read permission', async () => {
    const res = await get(`${TASKS}/summary?groupBy=status`, other);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'AUTH_FORBIDDEN' });
    const anonymous = await t.app.http(HOST).get(`${TASKS}/summary`);
    expect(anonymous.status).toBe(401);
  });
});
