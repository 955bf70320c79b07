import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { article, gadget, memo, widget } from '../helpers/testkit-module.ts';
import { defineEntity, entity, type AnyRoute } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { EntityOperations, entityRoutes } from '../../framework/http/entity-routes.ts';

/**
 * Whether a generic list, read or create may run as one exchange is decided once, from the
 * entity's declarations, when its routes are made: a route that may not carries no oneExchange,
 * so no request of it asks. At run time only what varies per request is left to decide
 * (test/framework/request-strategies.test.ts).
 */
function oneExchangeRoutes(declared: ReturnType<typeof entity>): { list: boolean; read: boolean; create: boolean } {
  const resolved = resolveEntity(declared);
  const routes = entityRoutes(resolved, new EntityOperations(resolved, { config: testConfig() }), testConfig());
  const has = (verb: string) => {
    const route = routes.find((r: AnyRoute) => r.operationId === resolved.names.operationId(verb))!;
    expect(route, verb).toBeDefined();
    return 'oneExchange' in route && route.oneExchange !== undefined;
  };
  return { list: has('list'), read: has('read'), create: has('create') };
}

const probeFields = {
  name: Type.String({ minLength: 1 }),
  note: Type.Optional(Type.String()),
  due: DateTime(),
  status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
};
const probe = (extra: Record<string, unknown>) =>
  entity(
    defineEntity({
      module: 'exchangeprobe',
      name: 'thing',
      fields: probeFields,
      permissions: { read: 'widget:read', write: 'widget:write' },
      ...extra,
    } as never),
  );

describe('one exchange, decided from the declarations', () => {
  it('a plain entity lists, reads and creates in one exchange', () => {
    expect(oneExchangeRoutes(entity(widget))).toEqual({ list: true, read: true, create: true });
  });

  it('row access and afterRead rule out the list and the read; hooks rule out the create', () => {
    expect(oneExchangeRoutes(entity(memo))).toEqual({ list: false, read: false, create: false });
    expect(oneExchangeRoutes(probe({ hooks: { afterRead: (_: unknown, row: unknown) => row } }))).toEqual({
      list: false,
      read: false,
      create: false,
    });
    expect(oneExchangeRoutes(probe({ hooks: { beforeWrite: async () => undefined } }))).toEqual({
      list: true,
      read: true,
      create: false,
    });
    // A hook that runs only on delete leaves the create alone.
    expect(oneExchangeRoutes(entity(gadget))).toEqual({ list: true, read: true, create: true });
  });

  it('a create whose body may name a state the initial states check goes through the handler; a command-owned state does not', () => {
    const states = { field: 'status', initial: ['open'], refusal: 'INVALID_TRANSITION' };
    expect(oneExchangeRoutes(probe({ states })).create).toBe(false);
    expect(oneExchangeRoutes(probe({ states, commandOwned: { status: 'close' }, commands: closeCommand })).create).toBe(
      true,
    );
    expect(oneExchangeRoutes(probe({ states: { field: 'status', refusal: 'INVALID_STATE' } })).create).toBe(true);
  });

  it('a create whose event carries a field the body may omit, or a date-time, goes through the handler', () => {
    expect(oneExchangeRoutes(probe({ eventFields: ['name'] })).create).toBe(true);
    expect(oneExchangeRoutes(probe({ eventFields: ['note'] })).create).toBe(false);
    expect(oneExchangeRoutes(probe({ eventFields: ['due'] })).create).toBe(false);
  });
});

const closeCommand = {
  close: {
    summary: 'Close the thing',
    async run() {
      return { status: 'closed' };
    },
  },
};

describe('an entity whose committed writes are watched', () => {
  const t = useTestApp({ customers: ['watched'] });

  it('still creates in one exchange, and its watchers hear of the commit before the answer', async () => {
    // The public read's validator cache watches articles' writes (framework/app.ts).
    expect(oneExchangeRoutes(entity(article)).create).toBe(true);
    const { cookie } = await signInAs(t.app, t.watched, ['article:write']);
    const heard: string[] = [];
    t.app.services.operations.of('testkit.article').onCommittedWrite((tenantId) => heard.push(tenantId));
    const transactions = t.app.services.transactions;
    const runStatement = transactions.runStatement.bind(transactions);
    let exchanges = 0;
    transactions.runStatement = ((...args: Parameters<typeof runStatement>) => {
      exchanges++;
      return runStatement(...args);
    }) as typeof transactions.runStatement;
    try {
      const created = await t.app
        .http('watched.localhost')
        .post('/api/v1/testkit/articles')
        .set('Cookie', cookie)
        .send({ slug: 'watched', title: 'Watched', body: 'Body' });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(exchanges).toBe(1);
      expect(heard).toEqual([t.watched.id]);
      // A refused create commits nothing, and nobody hears of it.
      const refused = await t.app
        .http('watched.localhost')
        .post('/api/v1/testkit/articles')
        .set('Cookie', cookie)
        .send({ slug: 'watched', title: 'Again', body: 'Body' });
      expect(refused.status).toBe(409);
      expect(exchanges).toBe(2);
      expect(heard).toEqual([t.watched.id]);
    } finally {
      transactions.runStatement = runStatement;
    }
  });
});
