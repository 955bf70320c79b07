import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import Type from 'typebox';
import { CompiledQuery } from 'kysely';
import { startTestApp, createCustomer, signInAs, type TestApp, type SignedIn } from '../helpers/app.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import {
  defineEntity,
  defineModule,
  defineRoute,
  entity,
  type DeliveredEvent,
  type SubscriptionDefinition,
} from '../../framework/entity/define.ts';
import { OutboxRelay, RELAY_COMMIT_WAIT_MS } from '../../framework/events/relay.ts';
import { Worker } from '../../framework/events/worker.ts';
import { problem } from '../../framework/errors.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { TxContext } from '../../framework/context/tx.ts';

/** What the subscriptions saw, for the assertions below (worker and test share the process). */
const seen: { eventId: string; tenant: string; role: string; ctxTenant: string; actorId: string | null }[] = [];
const attempts = new Map<string, number>();
const count = (key: string) => attempts.set(key, (attempts.get(key) ?? 0) + 1).get(key)!;

const run = async <R>(ctx: TxContext, text: string, params: unknown[] = []): Promise<R[]> =>
  (await ctx.db.executeQuery<R>(CompiledQuery.raw(text, params))).rows;

const copy: SubscriptionDefinition = {
  name: 'eventprobe-copy',
  event: 'eventprobe.thing.happened',
  handle: async (ctx, event) => {
    const [scope] = await run<{ tenant: string; role: string }>(
      ctx,
      'select app_tenant_id()::text as tenant, current_user as role',
    );
    seen.push({
      eventId: event.id,
      tenant: scope!.tenant,
      role: scope!.role,
      ctxTenant: ctx.tenant.id,
      actorId: ctx.actorId,
    });
    await run(ctx, `insert into widgets (name, size, color) values ($1, 1, 'copy')`, [`copy-${event.id}`]);
  },
};
const failsOnce: SubscriptionDefinition = {
  name: 'eventprobe-fails-once',
  event: 'eventprobe.thing.wobbly',
  retryLimit: 3,
  retryDelay: 0,
  handle: async (ctx, event) => {
    // The effect is written before the failure: the rollback must take it away with the event id.
    await run(ctx, `insert into widgets (name, size, color) values ($1, 1, 'wobbly')`, [`wobbly-${event.id}`]);
    if (count(`wobbly-${event.id}`) === 1) throw new Error('first attempt fails');
  },
};
const alwaysFails: SubscriptionDefinition = {
  name: 'eventprobe-flaky',
  event: 'eventprobe.thing.flaky',
  retryLimit: 2,
  retryDelay: 0,
  handle: async (_ctx, event) => {
    count(`flaky-${event.id}`);
    throw new Error(`the flaky handler refuses ${event.id}`);
  },
};

/** A generic entity over the widgets table whose hook fails after the write published its event. */
const gizmo = defineEntity({
  module: 'eventprobe',
  name: 'gizmo',
  storage: { table: 'widgets' },
  fields: {
    name: Type.String({ minLength: 1 }),
    size: Type.Integer({ minimum: 0, maximum: 1000 }),
    color: Type.String(),
  },
  permissions: { read: 'widget:read', write: 'widget:write' },
  hooks: {
    afterWrite: async (_ctx, { row }) => {
      if (row.name.startsWith('boom')) throw problem('CONFLICT', 'the hook refused');
    },
  },
});

const eventProbe = defineModule({
  name: 'eventprobe',
  events: ['eventprobe.thing.happened', 'eventprobe.thing.wobbly', 'eventprobe.thing.flaky'],
  entities: [entity(gizmo)],
  routes: [
    defineRoute({
      method: 'POST',
      url: '/api/v1/eventprobe/publish-then-fail',
      operationId: 'eventprobe-thing-fail',
      summary: 'Publishes, then fails',
      access: 'signedIn',
      publishes: ['eventprobe.thing.happened'],
      schema: { body: Type.Object({ marker: Type.String() }), response: { 200: Type.Object({}) } },
      handler: async ({ tx, body }) => {
        tx.publish('eventprobe.thing.happened', { marker: body.marker });
        await run(tx, `insert into widgets (name, size, color) values ($1, 1, 'x')`, [body.marker]);
        throw problem('CONFLICT', 'refused after publishing');
      },
    }),
  ],
  subscriptions: [copy, failsOnce, alwaysFails],
});

// With the webhook module: its subscription to every event concerns only tenants with an endpoint
// (onlyTenantsWith), and these tests' tenants have none, so it adds no job to the ones counted here.
const modules = [...allModules, testkitModule, eventProbe];
const HOST = 'events.localhost';
let web: TestApp;
let tenant: TenantRef;
let other: TenantRef;
let user: SignedIn;

beforeAll(async () => {
  web = await startTestApp({ modules, role: 'web' });
  tenant = await createCustomer(web, 'events', HOST);
  other = await createCustomer(web, 'events-other', 'events-other.localhost');
  user = await signInAs(web, tenant, ['widget:read', 'widget:write']);
});
afterAll(async () => {
  await web?.close();
});

const pool = () => web.services.db.pool;

async function outboxRows(where: string, params: unknown[]) {
  const { rows } = await pool().query(`select * from outbox where ${where} order by id`, params);
  return rows;
}

/** Publishes in a transaction of the tenant, as any handler would; returns the outbox row. */
async function publish(
  name: string,
  payload: Record<string, unknown>,
  on: TenantRef = tenant,
  actorId: string | null = user.userId,
) {
  const marker = randomUUID();
  await web.services.transactions.run(on, async (ctx) => ctx.publish(name, { ...payload, marker }), { actorId });
  const [row] = await outboxRows(`payload->>'marker' = $1`, [marker]);
  return row as {
    id: string;
    event_id: string;
    tenant_id: string;
    name: string;
    actor_id: string | null;
    occurred_at: Date;
    payload: Record<string, unknown>;
  };
}

/** The probe's first truthy value, polled by vi.waitFor; the timeout names what was awaited. */
function until<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs = 10_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await probe();
      if (!value) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: timeoutMs, interval: 20 },
  );
}

describe("publish: the outbox row belongs to the caller's transaction", () => {
  it('is written by the very transaction that published', async () => {
    const marker = randomUUID();
    const xact = await web.services.transactions.run(tenant, async (ctx) => {
      ctx.publish('eventprobe.thing.happened', { marker });
      return (await run<{ x: string }>(ctx, 'select pg_current_xact_id()::xid::text as x'))[0]!.x;
    });
    const { rows } = await pool().query(
      `select xmin::text as x, tenant_id, name, relayed_at from outbox where payload->>'marker' = $1`,
      [marker],
    );
    expect(rows).toEqual([{ x: xact, tenant_id: tenant.id, name: 'eventprobe.thing.happened', relayed_at: null }]);
  });

  it('records name, tenant, actor, time and payload for a generic write', async () => {
    const res = await web
      .http(HOST)
      .post('/api/v1/testkit/widgets')
      .set('Cookie', user.cookie)
      .send({ name: 'evented', size: 1, color: 'red' });
    expect(res.status).toBe(201);
    const rows = await outboxRows(`payload->>'id' = $1`, [res.body.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      name: 'testkit.widget.created',
      tenant_id: tenant.id,
      actor_id: user.userId,
      payload: { id: res.body.id },
    });
    expect(rows[0].occurred_at).toBeInstanceOf(Date);
  });

  it('gives each event a time-ordered id made in the process (UUIDv7), on both the one-exchange and the transaction path', async () => {
    const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    const created = await web
      .http(HOST)
      .post('/api/v1/testkit/widgets')
      .set('Cookie', user.cookie)
      .send({ name: 'v7-event', size: 1, color: 'red' });
    expect(created.status).toBe(201);
    const [oneExchange] = await outboxRows(`payload->>'id' = $1`, [created.body.id]);
    const first = await publish('eventprobe.thing.happened', {});
    const second = await publish('eventprobe.thing.happened', {});
    for (const row of [oneExchange, first, second]) expect(row.event_id).toMatch(v7);
    // Made later, sorted later: the audit trail's key takes them as appends.
    expect(first.event_id < second.event_id).toBe(true);
  });

  it('leaves no event behind a rolled-back request', async () => {
    const marker = `rolled-back-${randomUUID()}`;
    const res = await web
      .http(HOST)
      .post('/api/v1/eventprobe/publish-then-fail')
      .set('Cookie', user.cookie)
      .send({ marker });
    expect(res.status).toBe(409);
    expect(await outboxRows(`payload->>'marker' = $1`, [marker])).toEqual([]);
    expect((await pool().query('select 1 from widgets where name = $1', [marker])).rows).toEqual([]);
  });

  it('leaves no event behind a generic create whose hook fails after the write', async () => {
    const before = (await outboxRows(`name = 'eventprobe.gizmo.created'`, [])).length;
    const ok = await web
      .http(HOST)
      .post('/api/v1/eventprobe/gizmos')
      .set('Cookie', user.cookie)
      .send({ name: 'fine', size: 1, color: 'c' });
    expect(ok.status).toBe(201);
    const boom = await web
      .http(HOST)
      .post('/api/v1/eventprobe/gizmos')
      .set('Cookie', user.cookie)
      .send({ name: 'boom', size: 1, color: 'c' });
    expect(boom.status).toBe(409);
    const after = await outboxRows(`name = 'eventprobe.gizmo.created'`, []);
    expect(after).toHaveLength(before + 1);
    expect(after.at(-1).payload).toEqual({ id: ok.body.id });
    expect((await pool().query(`select 1 from widgets where name = 'boom'`)).rows).toEqual([]);
  });

  it('refuses payload keys that would carry an address, a body, a link or a token, and the transaction leaves nothing', async () => {
    const forbidden = [
      { email: 'a@example.test' },
      { body: 'hello' },
      { link: '/auth/reset' },
      { url: 'https://example.test' },
      { token: 'abc' },
      { resetToken: 'abc' },
      { password: 'x' },
      { user: { id: randomUUID(), email: 'nested@example.test' } },
      { recipients: [{ address: 'a@example.test' }] },
    ];
    for (const payload of forbidden) {
      const marker = randomUUID();
      const attempt = web.services.transactions.run(tenant, async (ctx) => {
        await run(ctx, `insert into widgets (name, size, color) values ($1, 1, 'x')`, [marker]);
        ctx.publish('eventprobe.thing.happened', { marker, ...payload });
      });
      await expect(attempt, JSON.stringify(payload)).rejects.toThrow(/may not carry/);
      expect(await outboxRows(`payload->>'marker' = $1`, [marker])).toEqual([]);
      expect((await pool().query('select 1 from widgets where name = $1', [marker])).rows).toEqual([]);
    }
    const allowed = await publish('eventprobe.thing.happened', {
      id: randomUUID(),
      userId: randomUUID(),
      changed: ['name'],
    });
    expect(allowed.name).toBe('eventprobe.thing.happened');
  });

  it('refuses an event no module declares', async () => {
    await expect(
      web.services.transactions.run(tenant, async (ctx) => ctx.publish('eventprobe.thing.undeclared', {})),
    ).rejects.toThrow(/not declared/);
  });
});

describe('the worker: relay, subscriptions, audit', () => {
  let process2: TestApp;
  let running: Worker;
  // Another process on the same database, as in production: web and worker share nothing but
  // PostgreSQL. Its relay's polling tick is an hour away, so every delivery below was woken by
  // the commit's notification.

  beforeAll(async () => {
    process2 = await startTestApp({ modules, role: 'worker', databaseUrl: web.databaseUrl, startWorker: false });
    running = new Worker(process2.services, { relayIntervalMs: 3_600_000 });
    await running.start({ schedule: false });
  });
  afterAll(async () => {
    await running?.stop();
    await process2?.close();
  });

  const relayed = (eventId: string) =>
    until(
      `relay of ${eventId}`,
      async () =>
        (await pool().query('select relayed_at from outbox where event_id = $1 and relayed_at is not null', [eventId]))
          .rows[0],
    );

  const jobsFor = async (eventId: string) =>
    (
      await pool().query<{ name: string }>(`select name from pgboss.job where data->>'id' = $1 order by name`, [
        eventId,
      ])
    ).rows.map((r) => r.name);

  it('queues each event once per subscription, no job for the audit trail, and marks it relayed', async () => {
    const happened = await publish('eventprobe.thing.happened', {});
    const plain = await publish('testkit.widget.approved', { id: randomUUID() });
    await relayed(happened.event_id);
    await relayed(plain.event_id);
    expect(await jobsFor(happened.event_id)).toEqual(['sub-eventprobe-copy']);
    expect(await jobsFor(plain.event_id)).toEqual([]);
  });

  it('is woken on commit from another process, well before its one-second tick', async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 8; i++) {
      const row = await publish('testkit.widget.approved', { id: randomUUID() });
      const { relayed_at: at } = await until(
        `relay of ${row.event_id}`,
        async () =>
          (
            await pool().query('select relayed_at from outbox where event_id = $1 and relayed_at is not null', [
              row.event_id,
            ])
          ).rows[0],
        2000,
      );
      latencies.push(at.getTime() - row.occurred_at.getTime());
    }
    const mean = latencies.reduce((a, b) => a + b, 0) / latencies.length;
    // Polling once a second alone would average about 500 ms; this relay does not poll at all.
    expect(mean, latencies.join(', ')).toBeLessThan(250);
  });

  it('never relays a row twice, however many relays run at once (FOR UPDATE SKIP LOCKED)', async () => {
    const markers: string[] = [];
    await web.services.transactions.run(tenant, async (ctx) => {
      for (let i = 0; i < 40; i++) {
        const marker = randomUUID();
        markers.push(marker);
        ctx.publish('eventprobe.thing.happened', { marker });
      }
    });
    const extra = [0, 1].map(() => new OutboxRelay(process2.services.db, running.boss, process2.services.registry));
    await Promise.all([...extra.map((r) => r.relayBatch()), ...extra.map((r) => r.relayBatch()), running.relay.wake()]);
    await until(
      'all relayed',
      async () => (await outboxRows(`payload->>'marker' = any($1) and relayed_at is null`, [markers])).length === 0,
    );
    const { rows } = await pool().query<{ id: string; n: string }>(
      `select data->'payload'->>'marker' as id, count(*) as n from pgboss.job where name = 'sub-eventprobe-copy' and data->'payload'->>'marker' = any($1) group by 1`,
      [markers],
    );
    expect(rows).toHaveLength(40);
    expect(rows.every((r) => Number(r.n) === 1)).toBe(true);
  });

  /** Commits one outbox row in a transaction of its own, as the owner (no NOTIFY: the test wakes the relay). */
  const commitOne = async () =>
    (
      await pool().query<{ event_id: string }>(
        `insert into outbox (tenant_id, name, payload) values ($1, 'testkit.widget.approved', '{}') returning event_id`,
        [tenant.id],
      )
    ).rows[0]!.event_id;
  const relayedAt = async (eventIds: string[]) =>
    (
      await pool().query<{ at: Date | null }>('select relayed_at as at from outbox where event_id = any($1)', [
        eventIds,
      ])
    ).rows.map((r) => r.at?.toISOString() ?? null);

  it('relays the events of several commits that arrive within the commit wait in one pass', async () => {
    expect(web.services.config.worker.relay_commit_wait_ms).toBe(RELAY_COMMIT_WAIT_MS);
    const relay = new OutboxRelay(process2.services.db, running.boss, process2.services.registry, {
      commitWaitMs: 1000,
    });
    // The running worker's relay idle first (its start-up pass, a notification's): the rows are this relay's alone.
    await running.relay.wake();
    const passes = vi.spyOn(relay, 'relayBatch');
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      ids.push(await commitOne());
      relay.committed(); // what each commit's NOTIFY does
    }
    await until('all relayed', async () => !(await relayedAt(ids)).includes(null));
    // One claim transaction: one relayBatch call, and one now() for every mark.
    expect(passes).toHaveBeenCalledTimes(1);
    expect(new Set(await relayedAt(ids)).size).toBe(1);
    await relay.stop();
  });

  it('never makes an explicit wake(), or the stop, wait for the commit wait', async () => {
    const relay = new OutboxRelay(process2.services.db, running.boss, process2.services.registry, {
      commitWaitMs: 60_000,
    });
    await running.relay.wake();
    const first = await commitOne();
    relay.committed();
    const started = performance.now();
    await relay.wake();
    expect(await relayedAt([first])).not.toContain(null);
    // A pass waiting for its commits at shutdown runs then, not a minute later or never.
    const second = await commitOne();
    relay.committed();
    await relay.stop();
    expect(await relayedAt([second])).not.toContain(null);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it("runs a subscription in the event's tenant transaction, as the restricted role, for the event's actor", async () => {
    const row = await publish('eventprobe.thing.happened', {});
    const effect = await until(
      "the subscription's effect",
      async () =>
        (await pool().query('select tenant_id from widgets where name = $1', [`copy-${row.event_id}`])).rows[0],
    );
    expect(effect.tenant_id).toBe(tenant.id);
    expect(seen.find((s) => s.eventId === row.event_id)).toEqual({
      eventId: row.event_id,
      tenant: tenant.id,
      role: 'tenantry_app',
      ctxTenant: tenant.id,
      actorId: user.userId,
    });

    const elsewhere = await publish('eventprobe.thing.happened', {}, other, null);
    const second = await until(
      "the other tenant's effect",
      async () =>
        (await pool().query('select tenant_id from widgets where name = $1', [`copy-${elsewhere.event_id}`])).rows[0],
    );
    expect(second.tenant_id).toBe(other.id);
  });

  it('is idempotent: the same event delivered twice, even at once, has its effect once', async () => {
    const event: DeliveredEvent = {
      id: randomUUID(),
      name: 'eventprobe.thing.happened',
      tenantId: tenant.id,
      actorId: null,
      occurredAt: new Date().toISOString(),
      payload: {},
    };
    await Promise.all([running.deliver(copy, event), running.deliver(copy, event)]);
    await running.deliver(copy, event);
    const { rows } = await pool().query('select 1 from widgets where name = $1', [`copy-${event.id}`]);
    expect(rows).toHaveLength(1);
    const processed = await pool().query('select subscription from processed_events where event_id = $1', [event.id]);
    expect(processed.rows).toEqual([{ subscription: 'eventprobe-copy' }]);
  });

  it('retries a failed delivery, whose effect was rolled back with it, until it succeeds once', async () => {
    const row = await publish('eventprobe.thing.wobbly', {});
    await until(
      'the retried effect',
      async () => (await pool().query('select 1 from widgets where name = $1', [`wobbly-${row.event_id}`])).rows[0],
    );
    expect(attempts.get(`wobbly-${row.event_id}`)).toBe(2);
    expect((await pool().query('select 1 from widgets where name = $1', [`wobbly-${row.event_id}`])).rows).toHaveLength(
      1,
    );
  });

  it('dead-letters an event whose subscription keeps failing, where an operator can see it', async () => {
    const row = await publish('eventprobe.thing.flaky', {});
    const letter = await until(
      'the dead letter',
      async () => (await pool().query('select * from dead_letters where event_id = $1', [row.event_id])).rows[0],
      20_000,
    );
    expect(attempts.get(`flaky-${row.event_id}`)).toBe(3);
    expect(letter).toMatchObject({
      queue: 'sub-eventprobe-flaky',
      tenant_id: tenant.id,
      name: 'eventprobe.thing.flaky',
    });
    expect(letter.error).toContain(`the flaky handler refuses ${row.event_id}`);
    expect(letter.payload).toEqual(row.payload);
  });

  it('retries with backoff by default, then dead-letters', async () => {
    const { rows } = await pool().query(
      `select retry_limit, retry_backoff, dead_letter from pgboss.queue where name = 'sub-eventprobe-copy'`,
    );
    expect(rows[0]).toEqual({ retry_limit: 5, retry_backoff: true, dead_letter: 'tenantry-dead-letters' });
  });

  it("records every event in the tenant's audit trail: name, tenant, actor, time and payload", async () => {
    const rows = [
      await publish('eventprobe.thing.happened', {}),
      await publish('testkit.widget.approved', { id: randomUUID() }, other, null),
    ];
    for (const row of rows) {
      const audit = await until(
        'the audit row',
        async () => (await pool().query('select * from audit_events where event_id = $1', [row.event_id])).rows[0],
      );
      expect(audit).toMatchObject({
        tenant_id: row.tenant_id,
        name: row.name,
        actor_id: row.actor_id,
        payload: row.payload,
      });
      expect(audit.occurred_at.getTime()).toBe(row.occurred_at.getTime());
    }
    // Every relayed event so far is in the trail.
    await until('all audited', async () => {
      const { rows: missing } = await pool().query(
        `select event_id from outbox o where relayed_at is not null and not exists (select 1 from audit_events a where a.event_id = o.event_id)`,
      );
      return missing.length === 0;
    });
    // Tenant-scoped: a tenant's transaction sees its own audit rows only.
    const visible = await web.services.transactions.run(other, async (ctx) =>
      run<{ tenant_id: string }>(ctx, 'select distinct tenant_id::text from audit_events'),
    );
    expect(visible).toEqual([{ tenant_id: other.id }]);
  });

  // The audit row's recorded_at and the outbox row's relayed_at are both now(): the start of the
  // transaction that wrote them. Equal values mean one transaction did both.
  const auditOf = async (eventId: string) =>
    (
      await pool().query<{ tenant_id: string; recorded_at: Date; relayed_at: Date }>(
        `select a.tenant_id::text, a.recorded_at, o.relayed_at from audit_events a join outbox o using (event_id) where event_id = $1`,
        [eventId],
      )
    ).rows;

  it("audit in the relay: an event's audit row is written by the transaction that relays it, with no job", async () => {
    const row = await publish('testkit.widget.approved', { id: randomUUID() });
    await relayed(row.event_id);
    const [audit] = await auditOf(row.event_id);
    expect(audit!.recorded_at.getTime()).toBe(audit!.relayed_at.getTime());
    expect(await jobsFor(row.event_id)).toEqual([]);
  });

  it('audit in the relay: an audit row that cannot be written keeps its event unrelayed and unqueued, until it can', async () => {
    const marker = randomUUID();
    await pool().query(`create function refuse_audit() returns trigger language plpgsql as $$
      begin if new.payload->>'marker' = '${marker}' then raise exception 'audit refused'; end if; return new; end $$`);
    await pool().query(
      'create trigger refuse_audit before insert on audit_events for each row execute function refuse_audit()',
    );
    try {
      await web.services.transactions.run(tenant, async (ctx) => ctx.publish('eventprobe.thing.happened', { marker }));
      const [row] = await outboxRows(`payload->>'marker' = $1`, [marker]);
      // The worker's relay, woken by that commit, fails its pass and leaves the row for later.
      await running.relay.wake();
      await expect(
        new OutboxRelay(process2.services.db, running.boss, process2.services.registry).relayBatch(),
      ).rejects.toThrow(/audit refused/);
      expect((await outboxRows('event_id = $1', [row.event_id]))[0].relayed_at).toBeNull();
      expect(await jobsFor(row.event_id)).toEqual([]);
      expect(await auditOf(row.event_id)).toEqual([]);
    } finally {
      await pool().query('drop trigger refuse_audit on audit_events; drop function refuse_audit()');
    }
    await running.relay.wake();
    const [row] = await outboxRows(`payload->>'marker' = $1`, [marker]);
    await relayed(row.event_id);
    expect(await auditOf(row.event_id)).toHaveLength(1);
    expect(await jobsFor(row.event_id)).toEqual(['sub-eventprobe-copy']);
  });

  it('a wake that comes while a pass fails gets a pass of its own after it, not only the failed one', async () => {
    const marker = randomUUID();
    // The pass fails its audit insert half a second after it starts, while the refusal is still on.
    await pool().query('create table refuse_audit_on (on_ boolean)');
    await pool().query('insert into refuse_audit_on values (true)');
    await pool().query(`create function refuse_audit_slowly() returns trigger language plpgsql as $$
      begin
        if new.payload->>'marker' = '${marker}' and exists (select 1 from refuse_audit_on) then
          perform pg_sleep(0.5);
          raise exception 'audit refused';
        end if;
        return new;
      end $$`);
    await pool().query(
      'create trigger refuse_audit_slowly before insert on audit_events for each row execute function refuse_audit_slowly()',
    );
    try {
      await web.services.transactions.run(tenant, async (ctx) => ctx.publish('eventprobe.thing.happened', { marker }));
      const [row] = await outboxRows(`payload->>'marker' = $1`, [marker]);
      const failing = running.relay.wake();
      // The pass is in the trigger's sleep: the refusal is lifted, and a caller asks for a pass.
      await until('the pass in the trigger', async () => {
        const { rows } = await pool().query(
          "select 1 from pg_stat_activity where query like '%audit_events%' and wait_event = 'PgSleep'",
        );
        return rows.length > 0;
      });
      await pool().query('delete from refuse_audit_on');
      const asked = running.relay.wake();
      await Promise.all([failing, asked]);
      // The pass the wake asked for has run by the time its promise settles: the row is relayed.
      expect((await outboxRows('event_id = $1', [row.event_id]))[0].relayed_at).not.toBeNull();
      expect(await auditOf(row.event_id)).toHaveLength(1);
    } finally {
      await pool().query(
        'drop trigger refuse_audit_slowly on audit_events; drop function refuse_audit_slowly(); drop table refuse_audit_on',
      );
    }
  });

  it('the relay commits without waiting for its WAL flush (a lost relay is relayed again)', async () => {
    // What the relay's transaction has set, seen by its own audit insert.
    await pool().query('create table relay_commit_seen (event_id uuid, synchronous_commit text)');
    await pool().query(`create function note_relay_commit() returns trigger language plpgsql as $$
      begin
        insert into relay_commit_seen values (new.event_id, current_setting('synchronous_commit'));
        return new;
      end $$`);
    await pool().query(
      'create trigger note_relay_commit before insert on audit_events for each row execute function note_relay_commit()',
    );
    try {
      const row = await publish('eventprobe.thing.happened', {});
      await running.relay.wake();
      await relayed(row.event_id);
      const { rows } = await pool().query('select synchronous_commit from relay_commit_seen where event_id = $1', [
        row.event_id,
      ]);
      expect(rows).toEqual([{ synchronous_commit: 'off' }]);
    } finally {
      await pool().query(
        'drop trigger note_relay_commit on audit_events; drop function note_relay_commit(); drop table relay_commit_seen',
      );
    }
  });

  it('audit in the relay: an event relayed again is recorded once, its first record kept', async () => {
    const row = await publish('testkit.widget.approved', { id: randomUUID() });
    await relayed(row.event_id);
    const [first] = await auditOf(row.event_id);
    // As after a crash between the relay's commit and anything that followed: the row is pending again.
    await pool().query('update outbox set relayed_at = null where event_id = $1', [row.event_id]);
    await running.relay.wake();
    await relayed(row.event_id);
    const again = await auditOf(row.event_id);
    expect(again).toHaveLength(1);
    expect(again[0]!.recorded_at.getTime()).toBe(first!.recorded_at.getTime());
    expect(again[0]!.relayed_at.getTime()).toBeGreaterThan(first!.relayed_at.getTime());
  });

  it("audit in the relay: a subscription that keeps failing does not hold back its event's audit row", async () => {
    const row = await publish('eventprobe.thing.flaky', {});
    await relayed(row.event_id);
    const [audit] = await auditOf(row.event_id);
    expect(audit!.recorded_at.getTime()).toBe(audit!.relayed_at.getTime());
    await until(
      'the dead letter',
      async () => (await pool().query('select 1 from dead_letters where event_id = $1', [row.event_id])).rows[0],
      20_000,
    );
    expect(await auditOf(row.event_id)).toHaveLength(1);
  });

  it("audit in the relay: one relay transaction records each tenant's events in that tenant's trail", async () => {
    // Both rows committed at once, so one claim takes them both (written as the owner, as no
    // request would: a tenant transaction can publish only in its own tenant).
    const { rows } = await pool().query<{ event_id: string; tenant_id: string }>(
      `insert into outbox (tenant_id, name, payload) values ($1, 'testkit.widget.approved', '{}'), ($2, 'testkit.widget.approved', '{}')
       returning event_id, tenant_id::text`,
      [tenant.id, other.id],
    );
    await running.relay.wake();
    const audits = [];
    for (const row of rows) {
      await relayed(row.event_id);
      const [audit] = await auditOf(row.event_id);
      expect(audit!.tenant_id).toBe(row.tenant_id);
      audits.push(audit!);
    }
    expect(audits[0]!.recorded_at.getTime()).toBe(audits[1]!.recorded_at.getTime());
    const visible = await web.services.transactions.run(other, async (ctx) =>
      run<{ event_id: string }>(ctx, 'select event_id from audit_events where event_id = any($1)', [
        rows.map((r) => r.event_id),
      ]),
    );
    expect(visible).toEqual([{ event_id: rows[1]!.event_id }]);
  });

  it('purges relayed rows once they are old, and only those', async () => {
    const old = await publish('testkit.widget.approved', { id: randomUUID() });
    const recent = await publish('testkit.widget.approved', { id: randomUUID() });
    await relayed(old.event_id);
    await relayed(recent.event_id);
    await pool().query(`update outbox set relayed_at = now() - interval '2 hours' where event_id = $1`, [old.event_id]);
    const purged = await running.relay.purge();
    expect(purged).toBeGreaterThanOrEqual(1);
    expect(await outboxRows('event_id = $1', [old.event_id])).toEqual([]);
    expect(await outboxRows('event_id = $1', [recent.event_id])).toHaveLength(1);
  });

  it('purges past an older row still held back at the start, in windows, until none is due', async () => {
    const held = await publish('testkit.widget.approved', { id: randomUUID() });
    const due = [];
    for (let i = 0; i < 3; i++) due.push(await publish('testkit.widget.approved', { id: randomUUID() }));
    for (const row of [held, ...due]) await relayed(row.event_id);
    // The oldest row was relayed just now (a late commit); the three after it, two hours ago.
    await pool().query(`update outbox set relayed_at = now() where event_id = $1`, [held.event_id]);
    await pool().query(`update outbox set relayed_at = now() - interval '2 hours' where event_id = any($1)`, [
      due.map((r) => r.event_id),
    ]);
    expect(await running.relay.purge()).toBeGreaterThanOrEqual(3);
    expect(await outboxRows('event_id = any($1)', [due.map((r) => r.event_id)])).toEqual([]);
    expect(await outboxRows('event_id = $1', [held.event_id])).toHaveLength(1);
    expect(await running.relay.purge()).toBe(0);
  });

  // Each index of the outbox is written by every write request's insert and again by the relay's
  // mark: a third one is a deliberate choice (migrations/framework/0007_outbox_two_indexes.sql).
  // The third, outbox_live, is one: it holds only the events streams show, written by the relay's
  // mark and never by an insert (its predicate), and serves a stream's batch
  // (migrations/framework/0015_live_positions.sql).
  it('keeps three indexes: its key, the unrelayed rows the relay claims, and the live positions', async () => {
    const { rows } = await pool().query(
      `select indexdef from pg_indexes where tablename = 'outbox' order by indexname`,
    );
    expect(rows.map((r) => r.indexdef.replace(/^.* USING /, ''))).toEqual([
      'btree (tenant_id, "position") WHERE ("position" IS NOT NULL)',
      'btree (id) WHERE (relayed_at IS NULL)',
      'btree (id)',
    ]);
  });
});
