import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';

/**
 * Issue 44: the task list answers questions over HTTP, from outside: filters, an or group, several
 * sort keys with the priority in its declared order, the fields it keeps and the assignee it
 * expands; what it refuses, and why; what a caller without the user's read permission may not ask.
 */

const t = useTestApp({ customers: ['acme', 'globex'] });
const HOST = 'acme.localhost';
const TASKS = '/api/v1/task/tasks';
const HOUR = 3_600_000;

let manager: SignedIn;
let taskReader: SignedIn;
let bearer: string;
let ann: SignedIn;
let bob: SignedIn;
/** Task title → id. */
const ids: Record<string, string> = {};
let theirs: { userId: string; email: string; taskId: string };

const at = (hours: number) => new Date(Date.now() + hours * HOUR);

async function insertTask(
  tenant: TenantRef,
  task: { title: string; status: string; priority: string; deadline: Date; assigneeId?: string | null },
  deleted = false,
): Promise<string> {
  return t.app.services.transactions.run(tenant, async (ctx) => {
    const { rows } = await ctx.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(
        `insert into tasks (title, status, priority, deadline, assignee_id, deleted_at) values ($1, $2, $3, $4, $5, $6) returning id`,
        [task.title, task.status, task.priority, task.deadline, task.assigneeId ?? null, deleted ? new Date() : null],
      ),
    );
    return rows[0]!.id;
  });
}

async function named(user: SignedIn, displayName: string, tenant: TenantRef = t.acme): Promise<void> {
  await t.app.services.transactions.run(tenant, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw('update users set display_name = $1 where id = $2', [displayName, user.userId]),
    ),
  );
}

beforeAll(async () => {
  manager = await signInAs(t.app, t.acme, ['task:read', 'task:update', 'user:read']);
  taskReader = await signInAs(t.app, t.acme, ['task:read']);
  ann = await signInAs(t.app, t.acme, []);
  bob = await signInAs(t.app, t.acme, []);
  await named(ann, 'Ann Lee');
  await named(bob, 'Bob Stone');
  const tasks = [
    {
      title: 'overdue critical for Ann',
      status: 'open',
      priority: 'critical',
      deadline: at(-2),
      assigneeId: ann.userId,
    },
    {
      title: 'overdue high for Bob',
      status: 'acknowledged',
      priority: 'high',
      deadline: at(-24),
      assigneeId: bob.userId,
    },
    { title: 'overdue high for nobody', status: 'open', priority: 'high', deadline: at(-72) },
    { title: 'critical in progress', status: 'in_progress', priority: 'critical', deadline: at(-1) },
    { title: 'overdue medium', status: 'open', priority: 'medium', deadline: at(-5) },
    { title: 'critical due later', status: 'open', priority: 'critical', deadline: at(1) },
    {
      title: 'critical for Bob, long overdue',
      status: 'acknowledged',
      priority: 'critical',
      deadline: at(-6),
      assigneeId: bob.userId,
    },
    { title: 'resolved low', status: 'resolved', priority: 'low', deadline: at(30) },
    { title: 'Quote "a, b" (c)', status: 'closed', priority: 'low', deadline: at(100) },
  ];
  for (const task of tasks) ids[task.title] = await insertTask(t.acme, task);
  // A deleted task that would match every filter below is never listed.
  await insertTask(t.acme, { ...tasks[0]!, title: 'deleted' }, true);
  // Another tenant's user, and a task assigned to them there.
  const them = await signInAs(t.app, t.globex, ['task:read', 'user:read']);
  await named(them, 'Ann Other', t.globex);
  theirs = {
    userId: them.userId,
    email: them.email,
    taskId: await insertTask(t.globex, {
      title: 'theirs',
      status: 'open',
      priority: 'critical',
      deadline: at(-2),
      assigneeId: them.userId,
    }),
  };
  // A personal access token sends the same request through the route's transaction instead of one exchange.
  const made = await t.app
    .http(HOST)
    .post('/api/v1/auth/tokens')
    .set('Cookie', manager.cookie)
    .send({ name: 'queries', permissions: ['task:read', 'user:read'] });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  bearer = `Bearer ${made.body.token}`;
});

/** A query string as a client writes it: each name and value percent-encoded (a + too). */
const encode = (query: string) =>
  query
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const i = pair.indexOf('=');
      return i < 0
        ? encodeURIComponent(pair)
        : `${encodeURIComponent(pair.slice(0, i))}=${encodeURIComponent(pair.slice(i + 1))}`;
    })
    .join('&');

/** GET path?query, its query encoded (raw: sent as written, a + then arriving as a space). */
const get = (path: string, who: SignedIn | 'bearer' = manager, raw = false) => {
  const [base, query] = path.split(/\?(.*)/s);
  const req = t.app.http(HOST).get(query === undefined || raw ? path : `${base}?${encode(query)}`);
  return who === 'bearer' ? req.set('Authorization', bearer) : req.set('Cookie', who.cookie);
};
const titles = async (query: string, who: SignedIn | 'bearer' = manager, raw = false): Promise<string[]> => {
  const res = await get(`${TASKS}?limit=100&${query}`, who, raw);
  expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(200);
  return (res.body.items as { title: string }[]).map((item) => item.title);
};
const sorted = (list: string[]) => [...list].sort();

describe('the acceptance query', () => {
  const QUERY =
    'status=in.(open,acknowledged)&deadline=lt.now&priority=gte.high&expand=assignee&fields=title,deadline,assignee.displayName&sort=-priority,deadline';

  for (const who of ['cookie', 'bearer'] as const) {
    it(`answers exactly the matching rows in that order, each with its assignee's display name (${who === 'cookie' ? 'one exchange' : "the route's transaction"})`, async () => {
      const res = await get(`${TASKS}?${QUERY}`, who === 'cookie' ? manager : 'bearer');
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ total: 4, totalExact: true, next: null });
      const item = (title: string, deadline: number, assignee: SignedIn | null, name?: string) => ({
        id: ids[title],
        title,
        deadline: expect.any(String),
        assignee: assignee ? { id: assignee.userId, displayName: name } : null,
        _hours: deadline,
      });
      const expected = [
        item('critical for Bob, long overdue', -6, bob, 'Bob Stone'),
        item('overdue critical for Ann', -2, ann, 'Ann Lee'),
        item('overdue high for nobody', -72, null),
        item('overdue high for Bob', -24, bob, 'Bob Stone'),
      ];
      expect(res.body.items).toEqual(expected.map(({ _hours, ...rest }) => rest));
      // Only the fields asked for (and the ids), inside the expansion too.
      for (const got of res.body.items)
        expect(Object.keys(got).sort()).toEqual(['assignee', 'deadline', 'id', 'title']);
      const deadlines = res.body.items.map((i: { deadline: string }) => Date.parse(i.deadline));
      expect(deadlines[0]).toBeLessThan(deadlines[1]);
      expect(deadlines[2]).toBeLessThan(deadlines[3]);
    });
  }
});

describe('operators', () => {
  it('eq and neq on every kind: text, enum, uuid, boolean, date-time', async () => {
    expect(await titles('title=eq.overdue medium')).toEqual(['overdue medium']);
    expect(sorted(await titles('status=eq.acknowledged'))).toEqual(
      sorted(['overdue high for Bob', 'critical for Bob, long overdue']),
    );
    expect(await titles(`assigneeId=eq.${ann.userId}`)).toEqual(['overdue critical for Ann']);
    expect((await titles('priority=neq.low')).length).toBe(7);
    expect((await titles('slaBreached=eq.false')).length).toBe(9);
    const [one] = (await get(`${TASKS}?title=eq.overdue medium`)).body.items;
    expect(await titles(`deadline=eq.${one.deadline}`)).toEqual(['overdue medium']);
    expect(await titles(`id=eq.${ids['resolved low']}`)).toEqual(['resolved low']);
  });

  it('gt, gte, lt and lte on date-times and on an enum, in its declared order (low < medium < high < critical)', async () => {
    expect(sorted(await titles('priority=gte.high&status=eq.open'))).toEqual(
      sorted(['overdue critical for Ann', 'overdue high for nobody', 'critical due later']),
    );
    expect(sorted(await titles('priority=gt.high'))).toEqual(
      sorted([
        'overdue critical for Ann',
        'critical in progress',
        'critical due later',
        'critical for Bob, long overdue',
      ]),
    );
    expect(sorted(await titles('priority=lt.medium'))).toEqual(sorted(['resolved low', 'Quote "a, b" (c)']));
    expect(sorted(await titles('priority=lte.medium'))).toEqual(
      sorted(['resolved low', 'Quote "a, b" (c)', 'overdue medium']),
    );
    expect(sorted(await titles('deadline=gt.now&deadline=lte.now+48h'))).toEqual(
      sorted(['critical due later', 'resolved low']),
    );
    expect(await titles('deadline=lt.now-48h')).toEqual(['overdue high for nobody']);
  });

  it('takes now with offsets in minutes, hours and days, and an ISO 8601 time; a + in the query string arrives as a space and still means +', async () => {
    for (const raw of [false, true]) {
      expect(sorted(await titles('deadline=gte.now-90m&deadline=lte.now+2h', manager, raw)), `raw ${raw}`).toEqual(
        sorted(['critical in progress', 'critical due later']),
      );
    }
    expect(sorted(await titles('deadline=gte.now+1d'))).toEqual(sorted(['resolved low', 'Quote "a, b" (c)']));
    const iso = at(-3).toISOString();
    expect(sorted(await titles(`deadline=gt.${iso}&deadline=lt.now`))).toEqual(
      sorted(['overdue critical for Ann', 'critical in progress']),
    );
    const offset = at(50).toISOString().replace('Z', '+00:00');
    expect(await titles(`deadline=gt.${offset}`)).toEqual(['Quote "a, b" (c)']);
    expect((await titles('createdAt=gte.now-7d')).length).toBe(9);
    expect(await titles('createdAt=lt.now-7d')).toEqual([]);
  });

  it('in.(...) takes a list, quoted values holding , ( ) or " included', async () => {
    expect(sorted(await titles('status=in.(resolved,closed)'))).toEqual(sorted(['resolved low', 'Quote "a, b" (c)']));
    expect(await titles(`title=in.("Quote \\"a, b\\" (c)",nothing)`)).toEqual(['Quote "a, b" (c)']);
    expect(await titles(`assigneeId=in.(${bob.userId},${theirs.userId})`)).toHaveLength(2);
  });

  it('is.null, is.true and is.false', async () => {
    expect((await titles('assigneeId=is.null')).length).toBe(6);
    expect((await titles('resolvedAt=is.null')).length).toBe(9);
    expect(await titles('slaBreached=is.true')).toEqual([]);
    expect((await titles('slaBreached=is.false')).length).toBe(9);
  });

  it('contains and startsWith ignore case and take % and _ as themselves', async () => {
    expect(sorted(await titles('title=contains.FOR BOB'))).toEqual(
      sorted(['overdue high for Bob', 'critical for Bob, long overdue']),
    );
    expect(sorted(await titles('title=startsWith.Critical'))).toEqual(
      sorted(['critical in progress', 'critical due later', 'critical for Bob, long overdue']),
    );
    expect(await titles('title=contains.%25')).toEqual([]);
    expect(await titles('title=startsWith._')).toEqual([]);
  });

  it('not. negates any operator', async () => {
    expect(sorted(await titles('status=not.in.(open,acknowledged,in_progress)'))).toEqual(
      sorted(['resolved low', 'Quote "a, b" (c)']),
    );
    expect(sorted(await titles('assigneeId=not.is.null'))).toEqual(
      sorted(['overdue critical for Ann', 'overdue high for Bob', 'critical for Bob, long overdue']),
    );
    expect((await titles('priority=not.gte.high')).length).toBe(3);
    expect((await titles('title=not.contains.critical')).length).toBe(5);
  });

  it('or=(...) gives one group of which one member holds, and(...) members one level deep; everything else holds beside it', async () => {
    expect(sorted(await titles('or=(status.eq.in_progress,and(priority.eq.medium,deadline.lt.now))'))).toEqual(
      sorted(['critical in progress', 'overdue medium']),
    );
    expect(sorted(await titles(`or=(title.eq."Quote \\"a, b\\" (c)",status.in.(resolved))&priority=eq.low`))).toEqual(
      sorted(['resolved low', 'Quote "a, b" (c)']),
    );
    expect(await titles('or=(status.eq.in_progress,status.eq.closed)&priority=eq.critical')).toEqual([
      'critical in progress',
    ]);
    expect(await titles(`or=(assignee.displayName.contains.ann,assigneeId.not.is.null)&status=eq.open`)).toEqual([
      'overdue critical for Ann',
    ]);
  });
});

describe('sorting', () => {
  it('sorts an enum in its declared order, either way, with several keys', async () => {
    const bySort = async (sort: string) =>
      (await get(`${TASKS}?limit=100&sort=${sort}`)).body.items.map((i: { priority: string }) => i.priority);
    expect(await bySort('-priority,title')).toEqual([
      'critical',
      'critical',
      'critical',
      'critical',
      'high',
      'high',
      'medium',
      'low',
      'low',
    ]);
    expect(await bySort('priority,-deadline')).toEqual([
      'low',
      'low',
      'medium',
      'high',
      'high',
      'critical',
      'critical',
      'critical',
      'critical',
    ]);
  });

  it('puts rows without a value last in both directions', async () => {
    for (const sort of ['assigneeId', '-assigneeId']) {
      const items = (await get(`${TASKS}?limit=100&sort=${sort},title`)).body.items as { assigneeId: string | null }[];
      expect(
        items.slice(0, 3).every((i) => i.assigneeId !== null),
        sort,
      ).toBe(true);
      expect(
        items.slice(3).every((i) => i.assigneeId === null),
        sort,
      ).toBe(true);
    }
  });

  it('walks a filtered list sorted by several keys with the cursor, each row once, in the order a single page gives', async () => {
    const query = 'status=not.eq.closed&sort=-priority,deadline';
    const whole = await titles(query);
    const walked: string[] = [];
    let after: string | null = null;
    for (let page = 0; page < 10; page++) {
      const res = await get(`${TASKS}?${query}&limit=3${after ? `&after=${after}` : ''}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.total).toBe(8);
      walked.push(...res.body.items.map((i: { title: string }) => i.title));
      after = res.body.next;
      if (!after) break;
    }
    expect(walked).toEqual(whole);
  });
});

describe('refusals say what is allowed', () => {
  const refusal = async (query: string) => {
    const res = await get(`${TASKS}?${query}`);
    expect(res.status, query).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    return res.body.errors as { pointer: string; message: string }[];
  };

  it('a bad operator is 422 naming the operators the field takes', async () => {
    for (const query of ['priority=like.high', 'priority=high', 'priority=contains.hi']) {
      const [error] = await refusal(query);
      expect(error!.pointer).toBe('/querystring/priority');
      for (const op of ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in']) expect(error!.message).toContain(op);
    }
    const [text] = await refusal('title=gt.a');
    expect(text!.message).toMatch(/title takes eq, neq, in, contains, startsWith/);
    const [inOr] = await refusal('or=(priority.like.high,status.eq.open)');
    expect(inOr).toMatchObject({
      pointer: '/querystring/or',
      message: expect.stringMatching(/priority takes eq, neq, gt/),
    });
  });

  it('a value that does not parse is 422 saying what would', async () => {
    expect((await refusal('priority=gte.urgent'))[0]).toMatchObject({
      pointer: '/querystring/priority',
      message: expect.stringMatching(/one of low, medium, high, critical/),
    });
    expect((await refusal('deadline=lt.tomorrow'))[0]!.message).toMatch(/ISO 8601.*now-7d/);
    expect((await refusal('assigneeId=eq.ann'))[0]!.message).toMatch(/a UUID/);
    expect((await refusal('slaBreached=is.maybe'))[0]!.message).toMatch(/true or false/);
    expect((await refusal('status=in.(open'))[0]!.message).toMatch(/in\.\(a,b,c\)/);
    expect((await refusal('title=contains.'))[0]!.message).toMatch(/at least one character/);
    expect((await refusal('or=status.eq.open'))[0]!.pointer).toBe('/querystring/or');
    expect((await refusal('or=(and(status.eq.open,and(priority.eq.low)))'))[0]!.pointer).toBe('/querystring/or');
  });

  it('an unknown field is 422 naming the fields the list filters by; so are fields and expand outside their names', async () => {
    const [error] = await refusal('colour=eq.red');
    expect(error!.pointer).toBe('/querystring/colour');
    expect(error!.message).toMatch(/title.*status.*priority.*deadline/);
    expect((await refusal('fields=title,colour'))[0]).toMatchObject({ pointer: '/querystring/fields' });
    expect((await refusal('expand=owner'))[0]).toMatchObject({
      pointer: '/querystring/expand',
      message: expect.stringMatching(/assignee/),
    });
    expect((await refusal('sort=colour'))[0]).toMatchObject({
      pointer: '/querystring/sort',
      message: expect.stringMatching(/priority/),
    });
  });

  it('takes at most 20 conditions, or members counted', async () => {
    const twenty = Array.from({ length: 20 }, () => 'priority=neq.low').join('&');
    expect((await get(`${TASKS}?${twenty}`)).status).toBe(200);
    const [error] = await refusal(`${twenty}&title=neq.x`);
    expect(error!.message).toMatch(/at most 20 conditions/);
    const nineteen = Array.from({ length: 19 }, () => 'priority=neq.low').join('&');
    expect((await get(`${TASKS}?${nineteen}&or=(status.eq.open)`)).status).toBe(200);
    expect((await refusal(`${nineteen}&or=(status.eq.open,status.eq.closed)`))[0]!.pointer).toBe('/querystring/or');
  });

  it('takes at most 100 values in an in list', async () => {
    const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`).join(',');
    expect((await get(`${TASKS}?title=in.(${values(100)})`)).status).toBe(200);
    expect((await refusal(`title=in.(${values(101)})`))[0]!.message).toMatch(/1 to 100 values/);
  });
});

describe('a cursor holds only with the filters and sort it was given under', () => {
  it('continues under the same ones, and is 422 under others', async () => {
    const query = 'priority=gte.high&sort=-priority,title&limit=2';
    const first = await get(`${TASKS}?${query}`);
    expect(first.body.next).toEqual(expect.any(String));
    const after = first.body.next as string;
    expect((await get(`${TASKS}?${query}&after=${after}`)).status).toBe(200);
    // The same filters written in another order are the same filters.
    expect((await get(`${TASKS}?sort=-priority,title&limit=2&priority=gte.high&after=${after}`)).status).toBe(200);
    for (const other of [
      'priority=gte.medium&sort=-priority,title&limit=2',
      'priority=gte.high&status=eq.open&sort=-priority,title&limit=2',
      'sort=-priority,title&limit=2',
      'priority=gte.high&sort=-priority,-title&limit=2',
    ]) {
      const res = await get(`${TASKS}?${other}&after=${after}`);
      expect(res.status, other).toBe(422);
      expect(res.body.errors[0].pointer, other).toBe('/querystring/after');
    }
  });

  it('a walk under a relative time keeps its cursor valid from page to page', async () => {
    const query = 'deadline=lt.now&sort=deadline&limit=2';
    const first = await get(`${TASKS}?${query}`);
    const second = await get(`${TASKS}?${query}&after=${first.body.next}`);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
  });
});

describe('filters and expansions through a reference', () => {
  it('filter tasks by their assignee’s fields', async () => {
    expect(await titles('assignee.displayName=contains.ann')).toEqual(['overdue critical for Ann']);
    expect(sorted(await titles('assignee.displayName=eq.Bob Stone'))).toEqual(
      sorted(['overdue high for Bob', 'critical for Bob, long overdue']),
    );
    expect((await titles('assignee.status=eq.active')).length).toBe(3);
    expect(await titles('assignee.displayName=not.contains.o&assignee.status=eq.active')).toEqual([
      'overdue critical for Ann',
    ]);
  });

  it('expands each row’s assignee as the user’s read answers it, or null', async () => {
    for (const who of [manager, 'bearer'] as const) {
      const res = await get(`${TASKS}?expand=assignee&sort=title&limit=100`, who);
      expect(res.status).toBe(200);
      const read = await get(`/api/v1/user/users/${ann.userId}`);
      const forAnn = res.body.items.find((i: { title: string }) => i.title === 'overdue critical for Ann');
      expect(forAnn.assignee).toEqual(read.body);
      const nobody = res.body.items.find((i: { title: string }) => i.title === 'overdue high for nobody');
      expect(nobody.assignee).toBeNull();
    }
  });

  it('a caller who may not read users is 403 AUTH_FORBIDDEN naming user:read, for a filter and for an expansion, never a partial row', async () => {
    for (const query of [
      'assignee.displayName=contains.ann',
      'expand=assignee',
      'fields=title,assignee.displayName',
      'or=(assignee.status.eq.active,status.eq.open)',
    ]) {
      const res = await get(`${TASKS}?${query}`, taskReader);
      expect(res.status, query).toBe(403);
      expect(res.body.code).toBe('AUTH_FORBIDDEN');
      expect(res.body.detail).toMatch(/user:read/);
      expect(res.body.permission).toBe('user:read');
      expect(res.body.items).toBeUndefined();
    }
    const read = await get(`${TASKS}/${ids['overdue critical for Ann']}?expand=assignee`, taskReader);
    expect(read.status).toBe(403);
    expect(read.body.detail).toMatch(/user:read/);
    // Without the reference, the same caller lists as before.
    expect((await get(`${TASKS}?title=contains.ann`, taskReader)).status).toBe(200);
  });
});

describe('fields and expand on a read by id', () => {
  it('keeps the id and the fields named, and expands the assignee, in one exchange and in the route’s transaction', async () => {
    for (const who of [manager, 'bearer'] as const) {
      const res = await get(`${TASKS}/${ids['overdue critical for Ann']}?fields=title,priority,assignee.email`, who);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({
        id: ids['overdue critical for Ann'],
        title: 'overdue critical for Ann',
        priority: 'critical',
        assignee: { id: ann.userId, email: ann.email },
      });
      const whole = await get(`${TASKS}/${ids['overdue high for nobody']}?expand=assignee`, who);
      expect(whole.body).toMatchObject({ title: 'overdue high for nobody', status: 'open', assignee: null });
    }
    const plain = await get(`${TASKS}/${ids['overdue critical for Ann']}`);
    expect(plain.body.assignee).toBeUndefined();
    expect(plain.body.description).toBeNull();
    const refused = await get(`${TASKS}/${ids['overdue critical for Ann']}?fields=colour`);
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0].pointer).toBe('/querystring/fields');
  });
});

describe('another tenant’s rows never match', () => {
  it('its ids, and its rows reached through a reference, match nothing here', async () => {
    expect(await titles(`assigneeId=eq.${theirs.userId}`)).toEqual([]);
    expect(await titles(`id=eq.${theirs.taskId}`)).toEqual([]);
    expect(await titles(`assignee.email=eq.${theirs.email}`)).toEqual([]);
    expect(await titles(`assignee.displayName=eq.Ann Other`)).toEqual([]);
    expect(await titles(`assignee.id=eq.${theirs.userId}`)).toEqual([]);
    expect((await get(`${TASKS}/${theirs.taskId}?expand=assignee`)).status).toBe(404);
  });

  it('a row here naming another tenant’s user expands to null, in either path', async () => {
    const id = await insertTask(t.acme, {
      title: 'forged reference',
      status: 'closed',
      priority: 'low',
      deadline: at(200),
      assigneeId: theirs.userId,
    });
    try {
      for (const who of [manager, 'bearer'] as const) {
        const res = await get(`${TASKS}?title=eq.forged reference&expand=assignee`, who);
        expect(res.body.items).toEqual([expect.objectContaining({ id, assigneeId: theirs.userId, assignee: null })]);
        expect(await titles(`title=eq.forged reference&assignee.id=eq.${theirs.userId}`, who)).toEqual([]);
      }
    } finally {
      await t.app.services.transactions.run(t.acme, (ctx) =>
        ctx.db.executeQuery(CompiledQuery.raw('delete from tasks where id = $1', [id])),
      );
    }
  });
});
