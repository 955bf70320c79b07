import { afterAll, describe, expect, it } from 'vitest';
import type { TSchema } from 'typebox';
import { closeWorld, type TenantWorld } from './world.ts';
import { openWorld } from './world-template.ts';
import { pathSource, readOperations, type Operation, type Param } from './operations.ts';
import { Verdicts, sweeper } from './bad-input.ts';
import { describeExchange, type Sent } from './harness.ts';
import { fetchDocument, nothingLostNothingLeaked } from './ledger.ts';
import { badAnswer } from './problems.ts';

/**
 * Issue 44, point 10: the query language under attack, derived from the live OpenAPI document. A
 * list is an operation that declares `or`; its filter parameters are those whose pattern admits
 * `<operator>.` (the operators read from the pattern itself), so a new list, or a new field, is
 * swept without editing this file. The parameters sweep (bad-input-params) already sends each
 * parameter its corpus (NUL, 10 kB, 1 MB, SQL quote, duplicates...) as a bare value, which the
 * pattern refuses before the parser sees it; here the hostile values come after a valid operator,
 * so they reach the parser and the compiler:
 *
 * - every filter parameter of every list with every operator it declares (and `not.` before the
 *   first), each with hostile values: NUL, a 10 kB string, SQL and LIKE metacharacters, quotes and
 *   parentheses, malformed `in` lists (unclosed, nested, empty, 101 values, an open quote),
 *   out-of-range numbers and dates, a lone surrogate. Sampled: FILTER_VALUES values per
 *   (parameter, operator), taken in turn from the hostile list so every value meets every kind of
 *   field across the sweep (SECURITY_FILTER_VALUES=<n> sends more);
 * - per list: `or` past 20 conditions, `and()` nested past one level, an unbalanced group, 21
 *   repeats of one filter, and forged cursors (random, truncated, 4 kB, and a real one sent with
 *   other filters: 422);
 * - per list in tenant A: every UUID parameter (own or through a reference) asked for tenant B's
 *   ids, alone and in an `in` list: never one of B's ids in the answer;
 * - the notifications list (owner-only): a member asking for the admin's notification by id, by
 *   `in`, by `or` and by negations never gets it.
 *
 * Every answer: below 500, no stack trace or SQL, and every refusal a problem document with a
 * registered code (problems.ts). The ledger then checks nothing was written and nothing leaked.
 */
const world = await openWorld();
const operations = readOperations(await fetchDocument(world), world.isOperatorPermission);
const FILTER_VALUES = Number(process.env.SECURITY_FILTER_VALUES ?? 2);

afterAll(async () => {
  console.log(
    `bad input (filters): ${lists.length} lists, ${world.client.requests} requests, ${FILTER_VALUES} values per operator`,
  );
  await closeWorld(world);
});

const enc = (text: string) => encodeURIComponent(text.toWellFormed());

/** Hostile values, written as they go on the wire after `<operator>.` (already percent-encoded). */
const HOSTILE: { label: string; raw: string }[] = [
  { label: 'NUL', raw: enc('a\u0000b') },
  { label: '10 kB', raw: 'a'.repeat(10_000) },
  { label: 'SQL quote', raw: enc("1' or '1'='1") },
  { label: 'SQL comment and statement', raw: enc("x'); drop table tasks; --") },
  { label: 'placeholder', raw: enc('$1') },
  { label: 'LIKE wildcards', raw: enc('%_%') },
  { label: 'backslashes', raw: enc('\\\\%\\_') },
  { label: 'open quote', raw: enc('"abc') },
  { label: 'quoted with escapes', raw: enc('"a\\"b\\\\"') },
  { label: 'parentheses', raw: enc('(a)') },
  { label: 'commas', raw: enc('a,b,c') },
  { label: 'lone surrogate (CESU bytes)', raw: '%ED%A0%80' },
  { label: '2^63', raw: '9223372036854775808' },
  { label: '1e400', raw: '1e400' },
  { label: 'NaN', raw: 'NaN' },
  { label: 'far past', raw: 'now-99999999999d' },
  { label: 'far future date', raw: '99999-12-31T00:00:00Z' },
  { label: 'bad date', raw: '2024-02-30T25:61:00Z' },
  { label: 'not a UUID', raw: '00000000-0000-0000-0000-00000000000g' },
  { label: 'empty', raw: '' },
];

/** Malformed `in` lists, and lists of hostile values. */
const IN_LISTS: { label: string; raw: string }[] = [
  { label: 'unclosed', raw: enc('(a,b') },
  { label: 'unopened', raw: enc('a,b)') },
  { label: 'nested', raw: enc('((a),b)') },
  { label: 'empty', raw: enc('()') },
  { label: 'open quote inside', raw: enc('(a,"b)') },
  { label: 'trailing comma', raw: enc('(a,)') },
  { label: '101 values', raw: enc(`(${Array.from({ length: 101 }, (_, i) => `v${i}`).join(',')})`) },
  { label: 'hostile members', raw: enc(`("1' or '1'='1","%_%",\u0000)`) },
];

/** The operators a filter parameter takes, read from its pattern; undefined for a parameter that is no filter. */
function operatorsOf(schema: TSchema): string[] | undefined {
  const patterns: string[] = [];
  const walk = (s: unknown) => {
    if (!s || typeof s !== 'object') return;
    const o = s as { pattern?: unknown; anyOf?: unknown[]; oneOf?: unknown[]; items?: unknown };
    if (typeof o.pattern === 'string') patterns.push(o.pattern);
    for (const m of [...(o.anyOf ?? []), ...(o.oneOf ?? [])]) walk(m);
    walk(o.items);
  };
  walk(schema);
  for (const pattern of patterns) {
    const found = /\(not\\\.\)\?\(([A-Za-z|]+)\)\\\./.exec(pattern);
    if (found) return found[1]!.split('|');
  }
  return undefined;
}

/** A UUID's filter takes eq, neq, in (and is): no order, no text operator. */
const isUuidFilter = (operators: readonly string[]) =>
  operators.includes('in') && !operators.includes('gt') && !operators.includes('contains');

interface List {
  op: Operation;
  filters: { param: Param; operators: string[] }[];
}

const lists: List[] = operations
  .filter(
    (op) =>
      op.method === 'GET' && !op.path.endsWith('/stream') && op.params.some((p) => p.in === 'query' && p.name === 'or'),
  )
  .map((op) => ({
    op,
    filters: op.params
      .filter((p) => p.in === 'query')
      .flatMap((param) => {
        const operators = operatorsOf(param.schema);
        return operators ? [{ param, operators }] : [];
      }),
  }));

/** The request of a list in its sweeper's tenant (A, or the operator's), with this query string. */
function listRequest(op: Operation, query: string, as?: { tenant: TenantWorld; cookie: string }): Sent {
  const { tenant, cookie } = as ? { tenant: as.tenant, cookie: as.cookie } : sweeper(op, world);
  let url = op.path;
  // A list under a record (its history): the record the suite samples for that path.
  for (const p of op.params.filter((x) => x.in === 'path'))
    url = url.replace(`{${p.name}}`, enc(pathSource(op, p.name).value(world, tenant)));
  return {
    operationId: op.id,
    method: 'GET',
    host: tenant.host,
    path: `${url}?${query}`,
    ...(cookie ? { cookie } : {}),
  };
}

describe('the filters of every list, from the OpenAPI document', () => {
  it('finds the lists and their filters in the document: the task list, notifications, history, activity among them', () => {
    const ids = lists.map((l) => l.op.id);
    expect(ids).toEqual(
      expect.arrayContaining([
        'task-task-list',
        'notification-notification-list',
        'audit-activity-list',
        'task-task-history',
      ]),
    );
    expect(lists.find((l) => l.op.id === 'task-task-list')!.filters.map((f) => f.param.name)).toEqual(
      expect.arrayContaining(['status', 'deadline', 'assigneeId', 'assignee.displayName']),
    );
  });

  describe.each(lists.map((l) => [`${l.op.id} (${l.op.path})`, l] as const))('%s', (_name, list) => {
    const { op } = list;
    let turn = 0;
    const next = () => HOSTILE[turn++ % HOSTILE.length]!;

    it('every filter with every operator and hostile values: below 500, every refusal a problem document', async () => {
      const verdicts = new Verdicts();
      for (const { param, operators } of list.filters) {
        const name = enc(param.name);
        for (const [i, operator] of operators.entries()) {
          const prefix = i === 0 ? ['', 'not.'] : [''];
          for (const not of prefix) {
            const values =
              operator === 'in'
                ? IN_LISTS.slice(0, FILTER_VALUES + 1).concat([IN_LISTS[(turn++ + 3) % IN_LISTS.length]!])
                : operator === 'is'
                  ? [{ label: 'null', raw: 'null' }, ...Array.from({ length: FILTER_VALUES }, next)]
                  : Array.from({ length: FILTER_VALUES }, next);
            for (const value of values)
              await verdicts.check(
                world,
                listRequest(op, `${name}=${not}${operator}.${value.raw}`),
                `${param.name}=${not}${operator}.<${value.label}>`,
              );
          }
        }
      }
      verdicts.expectNone(op);
    });

    it('or past 20 conditions, and() nested past one level, an unbalanced group, 21 repeats, forged cursors: refused as problems', async () => {
      const verdicts = new Verdicts();
      // A text field takes eq.x as it stands: the group is refused for its shape, not its values.
      const first =
        list.filters.find((f) => !f.param.name.includes('.') && f.operators.includes('contains')) ??
        list.filters.find((f) => f.operators.includes('eq'));
      if (first) {
        const member = `${first.param.name}.eq.x`;
        const cases: [string, string][] = [
          ['or of 21 members', `or=${enc(`(${Array.from({ length: 21 }, () => member).join(',')})`)}`],
          ['and() inside and()', `or=${enc(`(and(${member},and(${member},${member})))`)}`],
          ['or inside or', `or=${enc(`(or(${member}),${member})`)}`],
          ['unbalanced group', `or=${enc(`(${member},and(${member}`)}`],
          ['empty group', 'or=()'],
          ['21 repeats', Array.from({ length: 21 }, () => `${enc(first.param.name)}=eq.x`).join('&')],
        ];
        for (const [label, query] of cases) await verdicts.check(world, listRequest(op, query), label, true);
      }
      const forged = [
        ['random', 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkwMTIz'],
        ['truncated-looking', 'eyJ'],
        ['4 kB', 'A'.repeat(4096)],
      ] as const;
      for (const [label, cursor] of forged)
        await verdicts.check(world, listRequest(op, `after=${cursor}`), `forged cursor (${label})`, true);
      // A real cursor, sent with filters it was not given under.
      const page = await world.client.send(listRequest(op, 'limit=1'));
      const cursor = typeof page.json?.next === 'string' ? page.json.next : undefined;
      if (cursor && first) {
        await verdicts.check(
          world,
          listRequest(op, `limit=1&after=${cursor}&${enc(first.param.name)}=not.is.null`),
          'a real cursor under other filters',
          true,
        );
      }
      verdicts.expectNone(op);
    });

    const uuidFilters = list.filters.filter((f) => isUuidFilter(f.operators));
    it.skipIf(op.operator || uuidFilters.length === 0)(
      'another tenant’s ids inside every UUID filter, own or through a reference: none of them answered',
      async () => {
        // The hand-written routes' rows of tenant B and the first row of each of its entities.
        const theirs = [
          ...Object.values(world.b.rows),
          ...[...world.b.entityRows.values()].map((rows) => String(rows[0]!.id)),
        ].filter((v) => /^[0-9a-f-]{36}$/.test(v));
        const failures: string[] = [];
        for (const { param, operators } of uuidFilters) {
          const name = enc(param.name);
          const queries = [
            ...(operators.includes('eq') ? theirs.map((id) => `${name}=eq.${id}`) : []),
            ...(operators.includes('in') ? [`${name}=in.(${theirs.join(',')})`] : []),
            ...(operators.includes('neq') ? [`${name}=neq.${theirs[0]}`] : []),
            `or=${enc(`(${theirs.map((id) => `${param.name}.eq.${id}`).join(',')})`)}`,
          ];
          for (const query of queries) {
            const req = listRequest(op, query);
            const res = await world.client.send(req);
            const wrong = badAnswer(res);
            if (wrong) failures.push(`${wrong}: ${describeExchange(req, res)}`);
            const leaked = theirs.filter((id) => res.text.includes(id));
            if (res.status < 300 && leaked.length > 0)
              failures.push(`tenant B's ${leaked.join(', ')} answered to A: ${describeExchange(req, res)}`);
          }
        }
        expect(failures, failures.join('\n')).toEqual([]);
      },
    );
  });
});

describe('an owner-only list (notifications), whatever the filter', () => {
  it('never answers another person’s notification: by id, in, or, negations, hostile values', async () => {
    const list = lists.find((l) => l.op.path === '/api/v1/notification/notifications');
    expect(list, 'the notifications list is in the document').toBeDefined();
    const theirs = world.a.rows.adminNotification;
    const member = { tenant: world.a, cookie: world.a.member.cookie };
    const own = list!.filters.map((f) => f.param.name);
    expect(own).toEqual(expect.arrayContaining(['id', 'readAt']));
    const queries = [
      `id=eq.${theirs}`,
      `id=in.(${theirs},${world.a.rows.memberNotification})`,
      `id=not.neq.${theirs}`,
      'readAt=is.null',
      'readAt=not.is.null',
      `or=${enc(`(id.eq.${theirs},readAt.is.null,readAt.not.is.null)`)}`,
      `or=${enc(`(and(id.eq.${theirs},readAt.is.null),id.neq.${theirs})`)}`,
      ...own.map((name) => `${enc(name)}=not.is.null`),
      `id=eq.${theirs}&limit=100&sort=-createdAt`,
    ];
    const failures: string[] = [];
    for (const query of queries) {
      const req = listRequest(list!.op, query, member);
      const res = await world.client.send(req);
      const wrong = badAnswer(res);
      if (wrong) failures.push(`${wrong}: ${describeExchange(req, res)}`);
      if (res.text.includes(theirs))
        failures.push(`the admin's notification answered to the member: ${describeExchange(req, res)}`);
    }
    // The member's own notification is found by the same filters: the sweep asked a list that answers.
    const mine = await world.client.send(listRequest(list!.op, `id=eq.${world.a.rows.memberNotification}`, member));
    expect(mine.status).toBe(200);
    expect(mine.text).toContain(world.a.rows.memberNotification);
    expect(failures, failures.join('\n')).toEqual([]);
  });
});

await nothingLostNothingLeaked(world, () => lists.length);
