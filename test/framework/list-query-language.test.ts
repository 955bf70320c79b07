import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import { useTestApp } from '../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { testkitModule, widget } from '../helpers/testkit-module.ts';
import { compose } from '../../framework/composition.ts';
import type { EntityOperations } from '../../framework/operations/entity-ops.ts';
import { defineEntity, defineModule, entity, type ModuleDefinition } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { KeysetPager, QUERY_SHAPES_PER_LIST } from '../../framework/operations/paging.ts';
import { statementName } from '../../framework/db/statements.ts';
import { CursorSeal } from '../../framework/operations/cursor.ts';
import { RESERVED_NAMES } from '../../framework/query/query-model.ts';
import { QueryList } from '../../framework/query/query-list.ts';

/**
 * Issue 44, the framework's side of the query language: one parser and one compiler for every
 * list, whatever its field kinds; the names it reserves, refused at boot; the fields it never
 * lets a query name; what an expansion costs; how many statement texts a list keeps.
 */

// One connection: the statements a request prepared are the ones pg_prepared_statements shows.
const t = useTestApp({ customers: ['acme'], config: testConfig({ database: { pool_size: 1 } }) });
const HOST = 'acme.localhost';
const WIDGETS = '/api/v1/testkit/widgets';
let reader: SignedIn;

beforeAll(async () => {
  reader = await signInAs(t.app, t.acme, ['widget:read', 'widget:write', 'task:read', 'user:read', 'webhook:manage']);
  await t.app.services.transactions.run(t.acme, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw(
        `insert into widgets (name, size, color, note, approved, approved_at) values
           ('small', 1, 'red', null, false, null),
           ('medium', 50, 'green', 'a note', true, now() - interval '1 day'),
           ('large', 900, 'blue', 'Another NOTE', true, now() - interval '30 days')`,
      ),
    ),
  );
});

const names = async (query: string, who: SignedIn = reader) => {
  const res = await t.app.http(HOST).get(`${WIDGETS}?${query}`).set('Cookie', who.cookie);
  expect(res.status, `${query}: ${JSON.stringify(res.body)}`).toBe(200);
  return (res.body.items as { name: string }[]).map((w) => w.name).sort();
};

describe('one language over every field kind', () => {
  it('compares integers, booleans, nullable text and nullable date-times', async () => {
    expect(await names('size=gte.50')).toEqual(['large', 'medium']);
    expect(await names('size=in.(1,900)')).toEqual(['large', 'small']);
    expect(await names('approved=is.false')).toEqual(['small']);
    expect(await names('approved=eq.true&approvedAt=gte.now-7d')).toEqual(['medium']);
    expect(await names('note=is.null')).toEqual(['small']);
    expect(await names('note=contains.note')).toEqual(['large', 'medium']);
    expect(await names('approvedAt=not.is.null&sort=-approvedAt')).toEqual(['large', 'medium']);
  });

  it('refuses what does not fit the kind, saying what would', async () => {
    const refused = async (query: string) =>
      (await t.app.http(HOST).get(`${WIDGETS}?${query}`).set('Cookie', reader.cookie)).body.errors[0];
    expect(await refused('size=gte.big')).toMatchObject({ pointer: '/querystring/size', message: /an integer/ });
    expect(await refused('size=gte.1.5')).toMatchObject({ message: /an integer/ });
    expect(await refused('size=gte.99999999999999999999')).toMatchObject({ message: /an integer/ });
    expect(await refused('approved=gt.true')).toMatchObject({ message: /approved takes eq, neq, is/ });
    expect(await refused('approved=is.null')).toMatchObject({ message: /is takes true or false/ });
    expect(await refused('size=is.null')).toMatchObject({ message: /size takes eq, neq, gt, gte, lt, lte, in/ });
    expect(await refused('approvedAt=lt.2024-02-30')).toMatchObject({ message: /ISO 8601/ });
  });

  it('a list field takes contains (it holds the value)', async () => {
    const res = await t.app
      .http(HOST)
      .get(`/api/v1/user/users?roles=contains.nobody-has-this&fields=email`)
      .set('Cookie', reader.cookie);
    expect(res.status).toBe(200);
    expect(res.body.items).toEqual([]);
    const everyone = await t.app
      .http(HOST)
      .get('/api/v1/user/users?roles=not.contains.nobody-has-this')
      .set('Cookie', reader.cookie);
    expect(everyone.body.items.length).toBeGreaterThan(0);
  });
});

describe('secret fields', () => {
  it('a field marked Secret() is never filtered, sorted or selected', async () => {
    const endpoints = '/api/v1/webhook/endpoints';
    for (const query of ['signingSecret=is.null', 'sort=signingSecret', 'fields=url,signingSecret']) {
      const res = await t.app.http(HOST).get(`${endpoints}?${query}`).set('Cookie', reader.cookie);
      expect(res.status, query).toBe(422);
    }
    const doc = (await t.app.http(HOST).get('/api/v1/openapi.json')).body;
    const params = doc.paths[endpoints].get.parameters.map((p: { name: string }) => p.name);
    expect(params).not.toContain('signingSecret');
    expect(params).toContain('url');
  });
});

describe('the names a query reserves', () => {
  const config = testConfig();
  const withWidget = (extra: Record<string, unknown>): ModuleDefinition[] => [
    ...allModules,
    testkitModule,
    defineModule({
      name: 'bad',
      entities: [entity(defineEntity({ ...widget, module: 'bad', name: 'thing', ...extra } as typeof widget))],
    }),
  ];

  for (const name of RESERVED_NAMES) {
    it(`refuses at boot an entity field named ${name}`, () => {
      const fields = { ...widget.fields, [name]: Type.String() };
      expect(() => compose(withWidget({ fields, admin: undefined }), config)).toThrow(
        new RegExp(`entity bad\\.thing: field ${name} has a name a list's query reserves`),
      );
    });
  }

  it('refuses a reference whose query name is a field’s, and a filterable name that is no field', () => {
    const fields = { ...widget.fields, owner: Type.String(), ownerId: Type.String({ format: 'uuid' }) };
    expect(() =>
      compose(withWidget({ fields, admin: { ...widget.admin, references: { ownerId: 'user.user' } } }), config),
    ).toThrow(
      /reference ownerId is named owner in queries, which is a field's name; declare another in referenceNames/,
    );
    expect(() =>
      compose(
        withWidget({
          fields,
          admin: { ...widget.admin, references: { ownerId: 'user.user' } },
          referenceNames: { ownerId: 'keeper' },
        }),
        config,
      ),
    ).not.toThrow();
    expect(() => compose(withWidget({ filterable: ['name', 'colour'] }), config)).toThrow(
      /filterable field colour is not a field/,
    );
  });

  it("refuses a list page's filter control on a field the list does not filter by (admin.filters.fields)", () => {
    expect(() =>
      compose(withWidget({ admin: { ...widget.admin, filters: { fields: ['name', 'colour'] } } }), config),
    ).toThrow(/entity bad\.thing: admin\.filters\.fields names colour, which the list does not filter by/);
    expect(() =>
      compose(
        withWidget({ filterable: ['name'], admin: { ...widget.admin, filters: { fields: ['createdAt'] } } }),
        config,
      ),
    ).toThrow(/admin\.filters\.fields names createdAt/);
    expect(() =>
      compose(withWidget({ admin: { ...widget.admin, filters: { fields: ['name', 'createdAt'] } } }), config),
    ).not.toThrow();
  });
});

describe('an entity narrows what its lists filter by', () => {
  it('filterable: the other fields answer 422, declared sorts still sort', () => {
    const narrow = defineEntity({ ...widget, module: 'bad', name: 'thing', filterable: ['name', 'createdAt'] });
    const { operations } = compose(
      [...allModules, testkitModule, defineModule({ name: 'bad', entities: [entity(narrow)] })],
      testConfig(),
    );
    const ops = operations.of('bad.thing');
    expect([...ops.model.fields.keys()]).toEqual(['name', 'createdAt']);
    expect(() => ops.parse({ size: 'eq.1' }, new Date())).toThrow(/are not filtered by size/);
    expect(Object.keys(ops.pager.source.sorts)).toEqual(expect.arrayContaining(['name', 'createdAt', 'size']));
  });
});

describe('what an expansion costs', () => {
  /** The texts each pool checkout sends while fn runs. */
  async function sent(fn: () => Promise<unknown>): Promise<string[][]> {
    const pool = t.app.services.db.pool;
    const checkouts: string[][] = [];
    const watched = new WeakSet<pg.PoolClient>();
    const onAcquire = (client: pg.PoolClient) => {
      const texts: string[] = [];
      checkouts.push(texts);
      if (watched.has(client)) return;
      watched.add(client);
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const config = args[0] as string | { text: string };
        checkouts.at(-1)!.push(typeof config === 'string' ? config : config.text);
        return query(...args);
      };
    };
    pool.on('acquire', onAcquire);
    try {
      await fn();
    } finally {
      pool.off('acquire', onAcquire);
    }
    return checkouts;
  }

  let bearer: string;
  beforeAll(async () => {
    // Twelve users, each assigned two of 24 tasks.
    await t.app.services.transactions.run(t.acme, async (ctx) => {
      const { rows } = await ctx.db.executeQuery<{ id: string }>(
        CompiledQuery.raw(
          `insert into users (email, display_name, status) select 'u' || i || '@example.test', 'User ' || i, 'active' from generate_series(1, 12) as i returning id`,
        ),
      );
      for (const [i, user] of rows.entries()) {
        await ctx.db.executeQuery(
          CompiledQuery.raw(
            `insert into tasks (title, priority, deadline, assignee_id) values ($1, 'low', now() + interval '1 day', $3), ($2, 'low', now() + interval '1 day', $3)`,
            [`task ${i}a`, `task ${i}b`, user.id],
          ),
        );
      }
    });
    const made = await t.app
      .http(HOST)
      .post('/api/v1/auth/tokens')
      .set('Cookie', reader.cookie)
      .send({ name: 'cost', permissions: ['task:read', 'user:read'] });
    bearer = `Bearer ${made.body.token}`;
  });

  it('in one exchange, the page and its expansions are one statement, whatever the page size', async () => {
    for (const limit of [5, 20]) {
      const checkouts = await sent(async () => {
        const res = await t.app
          .http(HOST)
          .get(`/api/v1/task/tasks?expand=assignee&limit=${limit}`)
          .set('Cookie', reader.cookie);
        expect(res.status).toBe(200);
        expect(res.body.items).toHaveLength(limit);
        expect(res.body.items.every((i: { assignee: { displayName: string } }) => i.assignee.displayName)).toBe(true);
      });
      const statements = checkouts.flat().filter((s) => !/^(begin|commit)$/i.test(s.trim()));
      // The opening statement and the list, as without expand.
      expect(statements, `limit ${limit}`).toHaveLength(2);
      expect(statements[1]).toMatch(/from "users" x where x."id" = "tasks"."assignee_id"/);
    }
  });

  it("in the route's transaction, one statement per page for each expanded reference, whatever the page size", async () => {
    // Runs of the users' read by ids (EntityOperations.readMany), on the pool's one connection.
    const readsByIds = async () =>
      (
        await t.app.services.db.pool.query<{ n: number }>(
          `select coalesce(sum(generic_plans + custom_plans), 0)::int as n from pg_prepared_statements
            where statement like '%from "users" where id = any($1::uuid[])%'`,
        )
      ).rows[0]!.n;
    for (const limit of [5, 20]) {
      const before = await readsByIds();
      const res = await t.app
        .http(HOST)
        .get(`/api/v1/task/tasks?expand=assignee&limit=${limit}`)
        .set('Authorization', bearer);
      expect(res.status).toBe(200);
      expect(res.body.items).toHaveLength(limit);
      const assignees = new Set(res.body.items.map((i: { assignee: { id: string } }) => i.assignee.id));
      expect(assignees.size).toBeGreaterThan(2);
      expect((await readsByIds()) - before, `limit ${limit}`).toBe(1);
    }
  });
});

describe('the statement texts a list keeps', () => {
  it(`prepares at most ${QUERY_SHAPES_PER_LIST} texts for filters that vary with the request, and still answers past them`, async () => {
    const pager = new KeysetPager({
      select: 'id',
      from: 'widgets',
      id: 'id',
      where: [],
      sorts: { createdAt: { column: 'created_at' } },
    });
    const place = { tenantId: t.acme.id, cursors: new CursorSeal(Buffer.alloc(32, 7)) };
    const shapes = Array.from({ length: QUERY_SHAPES_PER_LIST + 8 }, (_, i) => `size <> $1 + ${i}`);
    const texts = shapes.map(
      (condition) =>
        pager.statement(
          { limit: 20, offset: 0, sort: 'createdAt' },
          { conditions: [condition], params: [0], varies: true },
          place,
        ).text,
    );
    expect(texts.filter((text) => statementName(text) !== undefined)).toHaveLength(QUERY_SHAPES_PER_LIST);
    const last = texts.at(-1)!;
    expect(statementName(last)).toBeUndefined();
    const rows = await t.app.services.transactions.run(t.acme, (ctx) =>
      ctx.db.executeQuery(CompiledQuery.raw(last, [0])),
    );
    expect(rows.rows.length).toBeGreaterThan(0);
  });
});

describe('the OpenAPI document', () => {
  it('declares on every list one parameter per filterable field, its operators in the description and only them in the pattern, and fields and expand with the names they take', async () => {
    const doc = (await t.app.http(HOST).get('/api/v1/openapi.json')).body;
    type Param = { name: string; description?: string; schema: { pattern?: string; anyOf?: { pattern?: string }[] } };
    const lists = [
      ...t.app.services.registry.entities
        .filter((e) => !e.singleton)
        .map((e) => ({
          path: e.names.path,
          model: (t.app.services.operations.of(e.names.key) as EntityOperations).model,
        })),
    ];
    expect(lists.map((l) => l.path)).toContain('/api/v1/task/tasks');
    const OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'is', 'contains', 'startsWith'];
    for (const { path, model } of lists) {
      const params = new Map<string, Param>(doc.paths[path].get.parameters.map((p: Param) => [p.name, p]));
      const filters = [
        ...model.fields.values(),
        ...[...model.references.values()].flatMap((r) =>
          [...r.target.fields.values()].map((f) => ({ ...f, name: `${r.name}.${f.name}` })),
        ),
      ];
      for (const field of filters) {
        const param = params.get(field.name);
        expect(param, `${path} ${field.name}`).toBeDefined();
        const pattern = new RegExp(param!.schema.anyOf![0]!.pattern!);
        for (const op of OPERATORS) {
          const takes = field.operators.includes(op as never);
          expect(pattern.test(`${op}.x`), `${path} ${field.name} ${op}`).toBe(takes);
          expect(pattern.test(`not.${op}.x`), `${path} ${field.name} not.${op}`).toBe(takes);
          if (takes) expect(param!.description).toContain(op);
        }
      }
      const fields = new RegExp(params.get('fields')!.schema.pattern!);
      for (const name of model.selectable) expect(fields.test(`id,${name}`), `${path} fields=${name}`).toBe(true);
      expect(fields.test('nope'), path).toBe(false);
      if (model.references.size > 0) {
        const expand = new RegExp(params.get('expand')!.schema.pattern!);
        for (const name of model.references.keys()) expect(expand.test(name), `${path} expand=${name}`).toBe(true);
      } else expect(params.has('expand'), path).toBe(false);
    }
    const tasks = new Map<string, Param>(doc.paths['/api/v1/task/tasks'].get.parameters.map((p: Param) => [p.name, p]));
    expect(tasks.get('priority')!.description).toMatch(/one of low, medium, high, critical/);
    expect(tasks.get('assignee.displayName')!.description).toMatch(/needs user:read/);
    expect(tasks.get('expand')!.description).toMatch(/assignee \(user\.user, needs user:read\)/);
    expect(doc.components.schemas.Task.properties.assignee).toMatchObject({
      anyOf: [{ $ref: '#/components/schemas/User' }, { type: 'null' }],
    });
    expect(doc.components.schemas.Task.required).not.toContain('assignee');
  });
});

describe('a hand-written list over its own fields (QueryList)', () => {
  const Widget = Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    size: Type.Integer(),
    note: Type.Union([Type.String(), Type.Null()]),
    createdAt: Type.String({ format: 'date-time' }),
  });
  const list = new QueryList({
    label: 'widgets',
    item: Widget,
    select: 'id, name, size, note, created_at as "createdAt"',
    from: 'widgets',
    where: ['deleted_at is null'],
    columns: { name: 'name', size: 'size', note: 'note', createdAt: 'created_at' },
    indexed: ['createdAt', 'name', 'size'],
    defaultSort: 'createdAt',
    search: { fields: ['name'], condition: (p) => `strpos(lower(name), ${p}) > 0` },
  });
  const page = (query: Record<string, unknown>) =>
    t.app.services.transactions.run(t.acme, async (ctx) =>
      (await list.page(ctx, { limit: 20, offset: 0, sort: 'createdAt', ...query })).page.items.map((w) => w.name),
    );

  it('filters, searches and sorts through the same parser and compiler, its fields from its item schema', async () => {
    expect(await page({ size: 'gt.10', sort: '-size' })).toEqual(['large', 'medium']);
    expect(await page({ note: 'is.null' })).toEqual(['small']);
    expect(await page({ q: 'L', sort: 'name' })).toEqual(['large', 'small']);
    expect(await page({ q: 'L', size: 'lt.100' })).toEqual(['small']);
    expect(await page({ or: '(name.eq.small,note.contains.another)', sort: 'size' })).toEqual(['small', 'large']);
    await expect(page({ size: 'contains.1' })).rejects.toThrow(/size takes eq, neq, gt, gte, lt, lte, in/);
    const properties = (list.querySchema as unknown as { properties: Record<string, unknown> }).properties;
    expect(Object.keys(properties)).toEqual(
      expect.arrayContaining([
        'limit',
        'offset',
        'sort',
        'after',
        'q',
        'name',
        'size',
        'note',
        'createdAt',
        'or',
        'fields',
      ]),
    );
    expect(properties.expand).toBeUndefined();
  });

  it('binds its cursor to its search and filters', async () => {
    const [first, second] = await t.app.services.transactions.run(t.acme, async (ctx) => {
      const one = await list.page(ctx, { limit: 1, offset: 0, sort: 'name', size: 'gt.0' });
      const two = await list.page(ctx, { limit: 1, offset: 0, sort: 'name', size: 'gt.0', after: one.page.next });
      return [one.page, two.page];
    });
    expect(first.items.map((w) => w.name)).toEqual(['large']);
    expect(second.items.map((w) => w.name)).toEqual(['medium']);
    await expect(
      t.app.services.transactions.run(t.acme, (ctx) =>
        list.page(ctx, { limit: 1, offset: 0, sort: 'name', size: 'gt.1', after: first.next }),
      ),
    ).rejects.toThrow(/not a cursor this list gave/);
    await expect(
      t.app.services.transactions.run(t.acme, (ctx) =>
        list.page(ctx, { limit: 1, offset: 0, sort: 'name', size: 'gt.0', q: 'l', after: first.next }),
      ),
    ).rejects.toThrow(/not a cursor this list gave/);
  });
});
