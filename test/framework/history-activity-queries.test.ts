import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Issue 44 point 7 and issue 46 points 2 and 4: a record's history and the tenant's activity are
 * lists of the query language like every other (QueryList): filters over their own fields (time,
 * operation or event, the resource and id an event concerns, the actor by kind, person and name),
 * several sort keys, cursors bound to their filters, field selection, one OpenAPI parameter per
 * filter, and 422 VALIDATION_FAILED naming what would be accepted for what does not fit.
 */
const t = useTestApp({ customers: ['acme', 'globex'] });
const ACME = 'acme.localhost';
const WIDGETS = '/api/v1/testkit/widgets';
const ACTIVITY = '/api/v1/audit/activity';

interface Revision {
  id: string;
  at: string;
  actor: { kind: string; userId: string | null; name: string | null };
  operation: string;
}

/** A UUIDv7 of this time, as the service makes a revision's id from its transaction's time. */
const v7 = (ms: number): string => {
  const time = ms.toString(16).padStart(12, '0');
  const rest = randomUUID().replaceAll('-', '').slice(12);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${rest.slice(1, 4)}-8${rest.slice(5, 8)}-${rest.slice(8, 20)}`;
};

const TEN_DAYS_AGO = () => Date.now() - 10 * 86_400_000;

describe('a record’s history through the query language', () => {
  let writer: SignedIn;
  let widgetId: string;
  let history: string;

  beforeAll(async () => {
    writer = await signInAs(t.app, t.acme, ['widget:read', 'widget:write']);
    const http = () => t.app.http(ACME);
    const created = await http()
      .post(WIDGETS)
      .set('Cookie', writer.cookie)
      .send({ name: `w-${randomUUID()}`, size: 1, color: 'red' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    widgetId = created.body.id;
    history = `${WIDGETS}/${widgetId}/history`;
    // A revision ten days old, written by a job (seeded in SQL: the service writes at its own time).
    await t.app.services.db.pool.query(
      `insert into revisions (tenant_id, id, entity, row_id, at, actor_kind, actor_name, operation, old_values, new_values)
       values ($1, $2, 'testkit.widget', $3, $4, 'job', 'nightly-sizes', 'update', '{"size": 0}', '{"size": 1}')`,
      [t.acme.id, v7(TEN_DAYS_AGO()), widgetId, new Date(TEN_DAYS_AGO())],
    );
    expect((await http().patch(`${WIDGETS}/${widgetId}`).set('Cookie', writer.cookie).send({ size: 2 })).status).toBe(
      200,
    );
    const token = await http()
      .post('/api/v1/auth/tokens')
      .set('Cookie', writer.cookie)
      .send({ name: 'deploy-bot', permissions: ['widget:read', 'widget:write'] });
    expect(token.status).toBe(201);
    const byToken = await http()
      .patch(`${WIDGETS}/${widgetId}`)
      .set('Authorization', `Bearer ${token.body.token}`)
      .send({ size: 3 });
    expect(byToken.status).toBe(200);
    expect((await http().post(`${WIDGETS}/${widgetId}/approve`).set('Cookie', writer.cookie).send({})).status).toBe(
      200,
    );
  });

  const revisions = async (query: string): Promise<Revision[]> => {
    const res = await t.app.http(ACME).get(`${history}?${query}`).set('Cookie', writer.cookie);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.items;
  };
  const described = (items: Revision[]) =>
    items.map((r) => `${r.operation}:${r.actor.kind}${r.actor.name ? `:${r.actor.name}` : ''}`);

  it('filters by operation, by actor (kind, person, name) and by time, newest first', async () => {
    expect(described(await revisions(''))).toEqual([
      'approve:user',
      'update:token:deploy-bot',
      'update:user',
      'create:user',
      'update:job:nightly-sizes',
    ]);
    expect(described(await revisions('operation=eq.approve'))).toEqual(['approve:user']);
    expect(described(await revisions('operation=in.(create,approve)'))).toEqual(['approve:user', 'create:user']);
    expect(described(await revisions('operation=not.eq.update'))).toEqual(['approve:user', 'create:user']);
    expect(described(await revisions('actor.kind=eq.token'))).toEqual(['update:token:deploy-bot']);
    expect(described(await revisions('actor.name=eq.nightly-sizes'))).toEqual(['update:job:nightly-sizes']);
    expect(described(await revisions('actor.name=is.null&operation=eq.update'))).toEqual(['update:user']);
    // The person acted with a session and with a token; the job named none.
    expect(await revisions(`actor.userId=eq.${writer.userId}`)).toHaveLength(4);
    expect(described(await revisions('actor.userId=is.null'))).toEqual(['update:job:nightly-sizes']);
    expect(described(await revisions('at=lt.now-7d'))).toEqual(['update:job:nightly-sizes']);
    expect(await revisions('at=gte.now-7d&at=lte.now+1h')).toHaveLength(4);
    const tenDaysAgo = new Date(TEN_DAYS_AGO() - 3_600_000).toISOString();
    expect(described(await revisions(`at=gt.${tenDaysAgo}&at=lt.now-1d`))).toEqual(['update:job:nightly-sizes']);
    expect(described(await revisions('or=(actor.kind.eq.token,operation.eq.create)'))).toEqual([
      'update:token:deploy-bot',
      'create:user',
    ]);
  });

  it('sorts by several keys, pages with a cursor bound to its filters, and selects fields', async () => {
    expect(described(await revisions('sort=at'))[0]).toBe('update:job:nightly-sizes');
    expect(described(await revisions('sort=operation,-at'))).toEqual([
      'approve:user',
      'create:user',
      'update:token:deploy-bot',
      'update:user',
      'update:job:nightly-sizes',
    ]);
    const http = () => t.app.http(ACME);
    const first = await http().get(`${history}?operation=eq.update&limit=2`).set('Cookie', writer.cookie);
    expect(first.body).toMatchObject({ total: 3, next: expect.any(String) });
    const second = await http()
      .get(`${history}?operation=eq.update&limit=2&after=${first.body.next}`)
      .set('Cookie', writer.cookie);
    expect(described([...first.body.items, ...second.body.items])).toEqual([
      'update:token:deploy-bot',
      'update:user',
      'update:job:nightly-sizes',
    ]);
    const elsewhere = await http()
      .get(`${history}?operation=eq.create&limit=2&after=${first.body.next}`)
      .set('Cookie', writer.cookie);
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body.code).toBe('VALIDATION_FAILED');
    const picked = await http().get(`${history}?operation=eq.approve&fields=operation`).set('Cookie', writer.cookie);
    expect(picked.body.items).toEqual([{ id: expect.any(String), operation: 'approve' }]);
  });

  it('refuses an unknown field, an operator that does not fit, and a value that does not parse, naming what would', async () => {
    const refused = async (query: string, pointer: string, says: RegExp) => {
      const res = await t.app.http(ACME).get(`${history}?${query}`).set('Cookie', writer.cookie);
      expect(res.status, query).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.errors[0].pointer, query).toBe(pointer);
      expect(res.body.errors[0].message, query).toMatch(says);
    };
    await refused('actor=eq.x', '/querystring/actor', /actor\.userId/);
    await refused('size=eq.3', '/querystring/size', /operation/);
    await refused('operation=gt.update', '/querystring/operation', /eq, neq, in/);
    await refused('actor.kind=eq.robot', '/querystring/actor.kind', /user.*token.*job/);
    await refused('at=lt.yesterday', '/querystring/at', /at/);
    await refused('or=(actor.kind.gte.x)', '/querystring/or', /actor\.kind/);
  });

  it('never answers another tenant’s record, whatever the filter', async () => {
    const neighbour = await signInAs(t.app, t.globex, ['widget:read']);
    const res = await t.app
      .http('globex.localhost')
      .get(`${history}?actor.userId=eq.${writer.userId}`)
      .set('Cookie', neighbour.cookie);
    expect(res.status).toBe(404);
  });
});

describe('the tenant’s activity through the query language', () => {
  let admin: SignedIn;
  const person = randomUUID();
  const task = randomUUID();
  const tenant = () => t.acme.id;
  // Seeded in SQL, in January 2020, so no event of the test's own requests falls among them.
  const at = (day: number, hour = 12) => new Date(Date.UTC(2020, 0, day, hour));
  const IN_2020 = 'at=lt.2021-01-01T00:00:00Z';

  beforeAll(async () => {
    admin = await signInAs(t.app, t.acme, ['audit:read']);
    const rows: [string, string, string | null, string | null, string | null, Date, Record<string, unknown>][] = [
      // tenant, name, actor id, actor kind, actor name, time, payload
      [tenant(), 'task.task.created', person, 'user', null, at(1), { id: task }],
      [tenant(), 'task.task.updated', person, 'token', 'deploy-bot', at(2), { id: task }],
      [tenant(), 'tenant.suspended', null, 'operator', null, at(3), { id: tenant() }],
      [tenant(), 'task.task.updated', person, null, null, at(4), { id: task }],
      [tenant(), 'user.roles_set', null, 'job', 'nightly', at(5), { id: person }],
      [t.globex.id, 'task.task.updated', person, 'user', null, at(2, 13), { id: task }],
    ];
    for (const [tenantId, name, actorId, kind, actorName, occurred, payload] of rows) {
      await t.app.services.db.pool.query(
        `insert into audit_events (tenant_id, event_id, name, actor_id, actor_kind, actor_name, occurred_at, payload)
         values ($1, $2, $3, $4, $5, $6, $7, $8)`,
        [tenantId, randomUUID(), name, actorId, kind, actorName, occurred, payload],
      );
    }
  });

  const events = async (query: string): Promise<string[]> => {
    const res = await t.app.http(ACME).get(`${ACTIVITY}?${IN_2020}&${query}`).set('Cookie', admin.cookie);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.items as { event: string; at: string }[]).map((a) => `${a.event}@${new Date(a.at).getUTCDate()}`);
  };

  it('filters by event name, the resource and id it concerns, the actor and time, newest first; never another tenant’s', async () => {
    expect(await events('')).toEqual([
      'user.roles_set@5',
      'task.task.updated@4',
      'tenant.suspended@3',
      'task.task.updated@2',
      'task.task.created@1',
    ]);
    expect(await events('event=eq.task.task.updated')).toEqual(['task.task.updated@4', 'task.task.updated@2']);
    expect(await events('event=startsWith.task.&event=not.eq.task.task.updated')).toEqual(['task.task.created@1']);
    expect(await events('entity=eq.task.task')).toEqual([
      'task.task.updated@4',
      'task.task.updated@2',
      'task.task.created@1',
    ]);
    expect(await events('entity=eq.user.user')).toEqual(['user.roles_set@5']);
    expect(await events('entity=is.null')).toEqual(['tenant.suspended@3']);
    expect(await events(`entityId=eq.${person}`)).toEqual(['user.roles_set@5']);
    expect(await events('actor.kind=eq.operator')).toEqual(['tenant.suspended@3']);
    // A row recorded before the actor's kind was: a user when one is named, as the answer shows it.
    expect(await events('actor.kind=eq.user')).toEqual(['task.task.updated@4', 'task.task.created@1']);
    expect(await events('actor.name=eq.deploy-bot')).toEqual(['task.task.updated@2']);
    expect(await events(`actor.userId=eq.${person}&sort=at`)).toEqual([
      'task.task.created@1',
      'task.task.updated@2',
      'task.task.updated@4',
    ]);
    expect(await events('at=gte.2020-01-02T00:00:00Z&at=lt.2020-01-04T00:00:00Z')).toEqual([
      'tenant.suspended@3',
      'task.task.updated@2',
    ]);
    expect(await events('or=(actor.kind.eq.job,and(entity.eq.task.task,actor.kind.eq.token))')).toEqual([
      'user.roles_set@5',
      'task.task.updated@2',
    ]);
  });

  it('sorts by several keys, pages with a cursor bound to its filters, and selects fields', async () => {
    expect(await events('sort=event,-at')).toEqual([
      'task.task.created@1',
      'task.task.updated@4',
      'task.task.updated@2',
      'tenant.suspended@3',
      'user.roles_set@5',
    ]);
    const http = () => t.app.http(ACME);
    const first = await http().get(`${ACTIVITY}?${IN_2020}&entity=eq.task.task&limit=2`).set('Cookie', admin.cookie);
    expect(first.body).toMatchObject({ total: 3, next: expect.any(String) });
    const second = await http()
      .get(`${ACTIVITY}?${IN_2020}&entity=eq.task.task&limit=2&after=${first.body.next}`)
      .set('Cookie', admin.cookie);
    expect(second.body.items.map((a: { event: string }) => a.event)).toEqual(['task.task.created']);
    const elsewhere = await http()
      .get(`${ACTIVITY}?${IN_2020}&entity=eq.user.user&limit=2&after=${first.body.next}`)
      .set('Cookie', admin.cookie);
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body.code).toBe('VALIDATION_FAILED');
    const picked = await http()
      .get(`${ACTIVITY}?${IN_2020}&event=eq.tenant.suspended&fields=event,actor`)
      .set('Cookie', admin.cookie);
    expect(picked.body.items).toEqual([
      { id: expect.any(String), event: 'tenant.suspended', actor: { kind: 'operator', userId: null, name: null } },
    ]);
  });

  it('refuses an unknown field or operator and a value that does not parse, naming what would, as a problem', async () => {
    const refused = async (query: string, pointer: string, says: RegExp) => {
      const res = await t.app.http(ACME).get(`${ACTIVITY}?${query}`).set('Cookie', admin.cookie);
      expect(res.status, query).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.errors[0].pointer, query).toBe(pointer);
      expect(res.body.errors[0].message, query).toMatch(says);
    };
    await refused('name=eq.x', '/querystring/name', /event/);
    await refused('payload=eq.x', '/querystring/payload', /entityId/);
    await refused('event=gte.a', '/querystring/event', /eq, neq, in/);
    await refused('entity=eq.nope.nope', '/querystring/entity', /task\.task/);
    await refused('at=eq.soon', '/querystring/at', /at/);
    await refused('actor.userId=eq.not-a-uuid', '/querystring/actor.userId', /actor\.userId/);
  });

  it('declares one OpenAPI parameter per filter, on the activity and on each history route', async () => {
    const doc = (await t.app.http(ACME).get('/api/v1/openapi.json').expect(200)).body as {
      paths: Record<string, Record<string, { operationId: string; parameters?: { name: string; in: string }[] }>>;
    };
    const parameters = (operationId: string) => {
      for (const item of Object.values(doc.paths))
        for (const op of Object.values(item))
          if (op.operationId === operationId)
            return (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      throw new Error(`no operation ${operationId}`);
    };
    expect(parameters('audit-activity-list')).toEqual(
      expect.arrayContaining([
        'at',
        'event',
        'entity',
        'entityId',
        'actor.kind',
        'actor.userId',
        'actor.name',
        'or',
        'fields',
      ]),
    );
    expect(parameters('testkit-widget-history')).toEqual(
      expect.arrayContaining(['at', 'operation', 'actor.kind', 'actor.userId', 'actor.name', 'or', 'fields', 'sort']),
    );
  });
});
