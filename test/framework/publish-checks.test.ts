import { Writable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testkitModule, article } from '../helpers/testkit-module.ts';
import { testConfig } from '../helpers/config.ts';
import { allModules } from '../../modules/index.ts';
import { compose } from '../../framework/composition.ts';
import {
  defineEntity,
  defineModule,
  entity,
  type AnyRoute,
  type ModuleDefinition,
} from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import type { TxContext } from '../../framework/context/tx.ts';

/** Code the types cannot see into: it takes any context and publishes what it likes. */
const publishOther = (ctx: TxContext) => ctx.publish('pubprobe.gadget.other', {});

/** An entity over the widgets table whose commands and route publish inside and outside their lists. */
const gadget = defineEntity({
  module: 'pubprobe',
  name: 'gadget',
  storage: { table: 'widgets' },
  fields: {
    name: Type.String({ minLength: 1 }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    color: Type.String(),
  },
  permissions: { read: 'widget:read', write: 'widget:write' },
  commands: {
    flag: {
      summary: 'Publishes what it declares',
      publishes: ['pubprobe.gadget.flagged'],
      async run(ctx) {
        ctx.publish('pubprobe.gadget.flagged', {});
        return { size: 2 };
      },
    },
    stray: {
      summary: 'Declares one event, publishes another',
      publishes: ['pubprobe.gadget.flagged'],
      async run(ctx) {
        publishOther(ctx);
        return { size: 3 };
      },
    },
    misspelt: {
      summary: 'Returns a key its entity has no field for (a programming error)',
      async run() {
        return { sise: 5 } as never;
      },
    },
    touch: {
      summary: "Declares nothing, publishes the entity's own updated event",
      async run(ctx, row) {
        ctx.publish('pubprobe.gadget.updated', { id: row.id });
        return { size: 4 };
      },
    },
  },
});

const strayRoute: AnyRoute = {
  method: 'POST',
  url: '/api/v1/pubprobe/stray',
  operationId: 'pubprobe-gadget-stray-route',
  summary: 'Declares one event, publishes another',
  access: { permission: 'widget:write' },
  publishes: ['pubprobe.gadget.flagged'],
  schema: { response: { 200: Type.Object({}) } },
  handler: async ({ tx }) => {
    publishOther(tx);
    return {};
  },
};

const pubProbe = defineModule({
  name: 'pubprobe',
  events: ['pubprobe.gadget.flagged', 'pubprobe.gadget.other'],
  entities: [entity(gadget)],
  routes: [strayRoute],
  // Listened to, so the boot check knows the event is not a leftover.
  subscriptions: [{ name: 'pubprobe-other', event: 'pubprobe.gadget.other', handle: async () => {} }],
});

const HOST = 'publish.localhost';
const BASE = '/api/v1/pubprobe/gadgets';
let cookie: string;

// The service's log, kept: a programming error is logged in full while the client learns nothing of it.
const logged: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    logged.push(String(chunk));
    done();
  },
});
const t = useTestApp({
  modules: [...allModules, testkitModule, pubProbe],
  logger: pino({ level: 'error' }, sink) as FastifyBaseLogger,
});
/** A programming error's answer: the generic 500 INTERNAL; its sentence only in the log. */
function expectProgrammingError(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  inLog: string,
) {
  expect(res.status).toBe(500);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe('INTERNAL');
  expect(res.body.detail).toBe('An unexpected error occurred; it has been logged');
  expect(JSON.stringify(res.body)).not.toMatch(/pubprobe|\/api\/v1|publishes|sise/);
  expect(logged.join('\n')).toContain(inLog);
}
beforeAll(async () => {
  const tenant = await createCustomer(t.app, 'publish', HOST);
  cookie = (await signInAs(t.app, tenant, ['widget:read', 'widget:write'])).cookie;
});

const post = (url: string, body: object = {}) => t.app.http(HOST).post(url).set('Cookie', cookie).send(body);
const outboxCount = async () =>
  Number((await t.app.services.db.pool.query('select count(*) as n from outbox')).rows[0].n);
const sizeOf = async (id: string) =>
  (await t.app.services.db.pool.query('select size from widgets where id = $1', [id])).rows[0].size;

describe('a route or command publishes only what its publishes list declares (run time)', () => {
  let id: string;
  beforeAll(async () => {
    const res = await post(BASE, { name: 'publisher', size: 1, color: 'red' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    id = res.body.id;
  });

  it("lets a command publish its declared events and the entity's lifecycle events", async () => {
    expect((await post(`${BASE}/${id}/flag`)).status).toBe(200);
    expect((await post(`${BASE}/${id}/touch`)).status).toBe(200);
    expect(await sizeOf(id)).toBe(4);
  });

  it('refuses a command publishing an event outside its list: 500 INTERNAL, event and route named in the log only, nothing stored or published', async () => {
    const before = { size: await sizeOf(id), events: await outboxCount() };
    const res = await post(`${BASE}/${id}/stray`);
    expectProgrammingError(
      res,
      'event pubprobe.gadget.other is not in the publishes list of POST /api/v1/pubprobe/gadgets/:id/stray',
    );
    expect(await sizeOf(id)).toBe(before.size);
    expect(await outboxCount()).toBe(before.events);
  });

  it('refuses a hand-written route publishing an event outside its list', async () => {
    const before = await outboxCount();
    const res = await post('/api/v1/pubprobe/stray');
    expectProgrammingError(
      res,
      'event pubprobe.gadget.other is not in the publishes list of POST /api/v1/pubprobe/stray (pubprobe-gadget-stray-route)',
    );
    expect(await outboxCount()).toBe(before);
  });

  it("answers a command returning a key its entity has no field for as a programming error, not the caller's 422", async () => {
    const before = await sizeOf(id);
    const res = await post(`${BASE}/${id}/misspelt`);
    expectProgrammingError(
      res,
      'The values command misspelt of pubprobe.gadget would store do not match the field schemas',
    );
    expect(logged.join('\n')).toContain('not a field: sise');
    expect(await sizeOf(id)).toBe(before);
  });

  it('still lets code outside a route publish any declared event', async () => {
    const tenant = (await t.app.services.hosts.resolve(HOST))!;
    await expect(t.app.services.transactions.run(tenant, async (ctx) => publishOther(ctx))).resolves.toBeUndefined();
  });
});

describe('publishes lists and declared events agree (boot)', () => {
  const config = testConfig();
  const start =
    (...modules: ModuleDefinition[]) =>
    () =>
      compose([...allModules, testkitModule, ...modules], config);
  const plain = (extra: Partial<ModuleDefinition>) => defineModule({ name: 'bad', ...extra });

  it('accepts the installation, the test kit and the probe above', () => {
    expect(start(pubProbe)).not.toThrow();
  });

  it('refuses a declared event that nothing publishes and no subscription listens to, naming event and module', () => {
    expect(start(plain({ events: ['bad.thing.forgotten'] }))).toThrow(
      /event bad\.thing\.forgotten of module bad is neither in any publishes list .* nor listened to by a subscription/,
    );
  });

  it('counts a subscription or job that lists the event in its publishes as its publisher', () => {
    const handle = async () => {};
    expect(
      start(
        plain({
          events: ['bad.thing.relayed'],
          subscriptions: [{ name: 'bad-relay', event: 'user.invited', publishes: ['bad.thing.relayed'], handle }],
        }),
      ),
    ).not.toThrow();
    expect(
      start(
        plain({
          events: ['bad.thing.swept'],
          jobs: [
            { name: 'bad-sweep', cron: '* * * * *', perTenant: false, publishes: ['bad.thing.swept'], run: handle },
          ],
        }),
      ),
    ).not.toThrow();
  });

  it('refuses a subscription, a job or entity hooks publishing an undeclared event', () => {
    const handle = async () => {};
    expect(
      start(
        plain({
          subscriptions: [{ name: 'bad-relay', event: 'user.invited', publishes: ['bad.thing.nowhere'], handle }],
        }),
      ),
    ).toThrow(/subscription bad-relay \(module bad\) publishes undeclared event bad\.thing\.nowhere/);
    expect(
      start(
        plain({
          jobs: [
            { name: 'bad-sweep', cron: '* * * * *', perTenant: false, publishes: ['bad.thing.nowhere'], run: handle },
          ],
        }),
      ),
    ).toThrow(/job bad-sweep \(module bad\) publishes undeclared event bad\.thing\.nowhere/);
    const hooked = defineEntity({ ...gadget, module: 'bad', hookPublishes: ['bad.gadget.nowhere'] });
    expect(start(plain({ entities: [entity(hooked)] }))).toThrow(
      /entity bad\.gadget: hookPublishes names undeclared event bad\.gadget\.nowhere/,
    );
  });
});

describe('declarations the types cannot check (boot)', () => {
  const config = testConfig();
  const start =
    (...modules: ModuleDefinition[]) =>
    () =>
      compose([...allModules, testkitModule, ...modules], config);
  const plain = (extra: Partial<ModuleDefinition>) => defineModule({ name: 'bad', ...extra });

  it('refuses a date-time field not declared with DateTime(), whose rows would be typed as strings', () => {
    const dated = defineEntity({
      module: 'bad',
      name: 'gadget',
      storage: { table: 'widgets' },
      permissions: gadget.permissions,
      fields: { name: Type.String(), seenAt: Type.Optional(Type.String({ format: 'date-time' })) },
    });
    expect(start(plain({ entities: [entity(dated)] }))).toThrow(
      /entity bad\.gadget: date-time field seenAt must be declared with DateTime\(\)/,
    );
    const declared = defineEntity({
      module: 'bad',
      name: 'gadget',
      storage: { table: 'widgets' },
      permissions: gadget.permissions,
      fields: { name: Type.String(), seenAt: Type.Optional(DateTime()) },
    });
    expect(start(plain({ entities: [entity(declared)] }))).not.toThrow();
  });

  it('refuses a public read by a field that is not one, or is optional, and a where naming no field', () => {
    const base = { ...article, module: 'bad' };
    const unknown = { ...base, publicRead: { ...article.publicRead!, by: 'handle' } } as never;
    expect(start(plain({ entities: [entity(unknown)] }))).toThrow(
      /entity bad\.article: publicRead looks up by handle, which is not a field/,
    );
    const optional = { ...base, publicRead: { ...article.publicRead!, by: 'publishedAt' } } as never;
    expect(start(plain({ entities: [entity(optional)] }))).toThrow(
      /publicRead looks up by publishedAt, which is optional/,
    );
    const where = { ...base, publicRead: { ...article.publicRead!, where: { state: 'live' } } } as never;
    expect(start(plain({ entities: [entity(where)] }))).toThrow(/publicRead where names state, which is not a field/);
  });

  it('refuses two public reads at one path', () => {
    const twin = defineEntity({ ...article, name: 'twin', storage: { ...article.storage, table: 'articles' } });
    expect(() =>
      compose(
        [...allModules, defineModule({ ...testkitModule, entities: [...testkitModule.entities!, entity(twin)] })],
        config,
      ),
    ).toThrow(/route GET \/api\/v1\/testkit\/public\/:slug is declared twice/);
  });

  it('refuses a multipart route that would hold a transaction open while the form streams', () => {
    const route = {
      method: 'POST',
      url: '/api/v1/bad/uploads',
      operationId: 'bad-upload-create',
      summary: 'Upload',
      access: 'signedIn',
      multipart: { form: Type.Object({}) },
      schema: { response: { 200: Type.Object({}) } },
      handler: async () => ({}),
    } as unknown as AnyRoute;
    expect(start(plain({ routes: [route] }))).toThrow(
      /route POST \/api\/v1\/bad\/uploads \(module bad\) is multipart: it must declare transaction 'none'/,
    );
  });

  it('refuses a route that may read from the replica but writes: not a GET, or publishing', () => {
    const reading = {
      method: 'GET',
      url: '/api/v1/bad/feed',
      operationId: 'bad-feed',
      summary: 'Feed',
      access: 'public',
      replica: 'always',
      schema: { response: { 200: Type.Object({}) } },
      handler: async () => ({}),
    } as unknown as AnyRoute;
    expect(start(plain({ routes: [reading] }))).not.toThrow();
    const posting = { ...reading, method: 'POST' } as AnyRoute;
    expect(start(plain({ routes: [posting] }))).toThrow(
      /route POST \/api\/v1\/bad\/feed \(module bad\) may read from the replica: it must be a GET that publishes nothing/,
    );
    const publishing = { ...reading, replica: 'on-request', publishes: ['testkit.widget.created'] } as AnyRoute;
    expect(start(plain({ routes: [publishing] }))).toThrow(
      /may read from the replica: it must be a GET that publishes nothing/,
    );
  });
});
