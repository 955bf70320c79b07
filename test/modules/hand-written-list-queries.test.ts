import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../helpers/app.ts';

/**
 * Issue 44, point 7: the hand-written lists take the same query language as the generated ones,
 * over their own fields, through the framework's parser and compiler (QueryList): webhook
 * deliveries by endpoint and result, tenants by status, tokens by userId and expiry, roles by
 * name and permission. Each declares its filters in the OpenAPI document; each refuses what does
 * not fit with 422 naming what would; none reaches rows its route does not list.
 */
const t = useTestApp({ customers: ['acme', 'globex'] });
const ACME = 'acme.localhost';
const GLOBEX = 'globex.localhost';

const get = async (host: string | undefined, url: string, who: SignedIn) =>
  (host ? t.app.http(host) : t.app.http()).get(url).set('Cookie', who.cookie);

describe('webhook deliveries by endpoint and result', () => {
  const one = randomUUID();
  const two = randomUUID();
  let admin: SignedIn;
  let neighbour: SignedIn;

  beforeAll(async () => {
    admin = await signInAs(t.app, t.acme, ['webhook:manage']);
    neighbour = await signInAs(t.app, t.globex, ['webhook:manage']);
    const row = (endpoint: string, id: string, status: string, hoursAgo: number, httpStatus: number | null) =>
      CompiledQuery.raw(
        `insert into webhook_deliveries (endpoint_id, message_id, event_type, message_created_at, data, attempt, status, http_status, duration_ms, error, created_at)
         values ($1, $2, 'task.task.created', now(), '{}', 1, $3, $4, 5, $5, now() - make_interval(hours => $6))`,
        [endpoint, id, status, httpStatus, status === 'succeeded' ? null : 'it failed', hoursAgo],
      );
    await t.app.services.transactions.run(t.acme, async (ctx) => {
      await ctx.db.executeQuery(row(one, 'a', 'succeeded', 1, 200));
      await ctx.db.executeQuery(row(one, 'b', 'failed', 2, 500));
      await ctx.db.executeQuery(row(two, 'c', 'dead', 3, null));
      await ctx.db.executeQuery(row(two, 'd', 'refused', 50, null));
    });
    await t.app.services.transactions.run(t.globex, (ctx) => ctx.db.executeQuery(row(one, 'x', 'failed', 1, 500)));
  });

  const ids = async (query: string, who = admin, host = ACME) => {
    const res = await get(host, `/api/v1/webhook/deliveries?${query}`, who);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.items as { webhookId: string }[]).map((d) => d.webhookId);
  };

  it('filters by endpoint, by result, by answer and by time, newest first', async () => {
    expect(await ids(`endpointId=eq.${one}`)).toEqual(['a', 'b']);
    expect(await ids('status=in.(failed,dead)')).toEqual(['b', 'c']);
    expect(await ids('status=not.eq.succeeded&createdAt=gte.now-1d')).toEqual(['b', 'c']);
    expect(await ids('httpStatus=is.null&sort=createdAt')).toEqual(['d', 'c']);
    expect(await ids(`or=(status.eq.refused,and(endpointId.eq.${one},httpStatus.gte.500))`)).toEqual(['b', 'd']);
    const res = await get(ACME, `/api/v1/webhook/deliveries?endpointId=eq.${one}&fields=status`, admin);
    expect(res.body.items).toEqual([
      { id: expect.any(String), status: 'succeeded' },
      { id: expect.any(String), status: 'failed' },
    ]);
  });

  it('never answers another tenant’s attempts, whatever the filter', async () => {
    expect(await ids(`endpointId=eq.${one}`, neighbour, GLOBEX)).toEqual(['x']);
    expect(await ids('webhookId=in.(a,b,c,d)', neighbour, GLOBEX)).toEqual([]);
  });

  it('refuses an operator that does not fit, naming the ones that do', async () => {
    const res = await get(ACME, '/api/v1/webhook/deliveries?status=contains.fail', admin);
    expect(res.status).toBe(422);
    expect(res.body.errors[0]).toMatchObject({
      pointer: '/querystring/status',
      message: expect.stringMatching(/status takes eq, neq, gt, gte, lt, lte, in/),
    });
    const value = await get(ACME, '/api/v1/webhook/deliveries?status=eq.lost', admin);
    expect(value.status).toBe(422);
    expect(value.body.errors[0].message).toMatch(/succeeded, failed, refused, dead/);
  });

  it('the admin log takes the same filters, and its next page keeps them', async () => {
    const page = await get(ACME, '/admin/webhook/deliveries?limit=1&status=in.(failed,dead)', admin);
    expect(page.status).toBe(200);
    const next = /href="([^"]*after=[^"]*)"/.exec(page.text)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toContain('status=in.%28failed%2Cdead%29');
    expect((await get(ACME, next!, admin)).status).toBe(200);
  });
});

describe('tenants by status', () => {
  let operator: SignedIn;
  beforeAll(async () => {
    operator = await signInAs(t.app, t.app.operator, ['tenant:manage']);
    await t.app.services.db.pool.query(`update tenants set status = 'suspended' where slug = 'globex'`);
  });

  const slugs = async (query: string) => {
    const res = await get(undefined, `/api/v1/tenant/tenants?${query}`, operator);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.items as { slug: string }[]).map((x) => x.slug);
  };

  it('filters by status and the other fields, alone and beside q', async () => {
    expect(await slugs('status=eq.suspended')).toEqual(['globex']);
    expect(await slugs('status=eq.active&sort=slug')).toEqual(['acme', 'operator']);
    expect(await slugs('isOperator=is.false&sort=-slug')).toEqual(['globex', 'acme']);
    expect(await slugs('q=customer&status=neq.suspended')).toEqual(['acme']);
    expect(await slugs('slug=startsWith.GLO')).toEqual(['globex']);
  });

  it('a cursor holds only under the filters it was given with', async () => {
    const first = await get(undefined, '/api/v1/tenant/tenants?status=eq.active&limit=1', operator);
    expect(first.body.next).toEqual(expect.any(String));
    const same = await get(
      undefined,
      `/api/v1/tenant/tenants?status=eq.active&limit=1&after=${first.body.next}`,
      operator,
    );
    expect(same.status).toBe(200);
    const other = await get(
      undefined,
      `/api/v1/tenant/tenants?status=neq.active&limit=1&after=${first.body.next}`,
      operator,
    );
    expect(other.status).toBe(422);
    expect(other.body.errors[0].pointer).toBe('/querystring/after');
  });

  it('hosts are answered, not filtered', async () => {
    const res = await get(undefined, '/api/v1/tenant/tenants?hosts=eq.acme.localhost', operator);
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
  });
});

describe('tokens by userId and expiry', () => {
  let owner: SignedIn;
  let other: SignedIn;
  let manager: SignedIn;

  const make = async (who: SignedIn, name: string, expiresInDays: number) => {
    const res = await t.app
      .http(ACME)
      .post('/api/v1/auth/tokens')
      .set('Cookie', who.cookie)
      .send({ name, permissions: [], expiresInDays });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  };

  beforeAll(async () => {
    owner = await signInAs(t.app, t.acme, ['task:read']);
    other = await signInAs(t.app, t.acme, ['task:read']);
    manager = await signInAs(t.app, t.acme, ['token:manage']);
    await make(owner, 'soon', 3);
    await make(owner, 'later', 300);
    await make(other, 'theirs', 3);
  });

  const names = async (query: string, who: SignedIn) => {
    const res = await get(ACME, `/api/v1/auth/tokens?${query}`, who);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return (res.body.items as { name: string }[]).map((x) => x.name);
  };

  it('filters the caller’s own by expiry and name', async () => {
    expect(await names('expiresAt=lt.now%2B7d', owner)).toEqual(['soon']);
    expect(await names('expiresAt=gte.now%2B7d', owner)).toEqual(['later']);
    expect(await names('sort=expiresAt&name=in.(soon,later)', owner)).toEqual(['soon', 'later']);
  });

  it('by userId: another user’s need token:manage; the bare id of before still reads as eq', async () => {
    expect((await get(ACME, `/api/v1/auth/tokens?userId=eq.${other.userId}`, owner)).status).toBe(403);
    expect((await get(ACME, `/api/v1/auth/tokens?userId=in.(${owner.userId},${other.userId})`, owner)).status).toBe(
      403,
    );
    expect(await names(`userId=eq.${owner.userId}&sort=name`, owner)).toEqual(['later', 'soon']);
    expect(await names(`userId=${other.userId}`, manager)).toEqual(['theirs']);
    expect(await names(`userId=in.(${owner.userId},${other.userId})&expiresAt=lt.now%2B7d&sort=name`, manager)).toEqual(
      ['soon', 'theirs'],
    );
  });

  it('without token:manage a filter never reaches another person’s tokens', async () => {
    expect(await names('expiresAt=gte.now&sort=name', owner)).toEqual(['later', 'soon']);
    expect(await names(`or=(name.eq.theirs,name.eq.soon)`, owner)).toEqual(['soon']);
    // With token:manage but no userId filter: the caller's own, as before.
    expect(await names('name=eq.theirs', manager)).toEqual([]);
  });
});

describe('roles by name and permission', () => {
  let admin: SignedIn;
  beforeAll(async () => {
    admin = await signInAs(t.app, t.acme, ['role:manage']);
    await t.app.services.transactions.run(t.acme, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into roles (name, permissions) values ('support.one', '{task:read}'), ('support.two', '{task:read,task:update}')`,
        ),
      ),
    );
  });

  it('filters by name and by a permission held, sorted by name either way', async () => {
    const names = async (query: string) => {
      const res = await get(ACME, `/api/v1/auth/roles?${query}`, admin);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.items as { name: string }[]).map((r) => r.name);
    };
    expect(await names('name=startsWith.support')).toEqual(['support.one', 'support.two']);
    expect(await names('name=startsWith.support&sort=-name')).toEqual(['support.two', 'support.one']);
    expect(await names('permissions=contains.task:update')).toEqual(['support.two']);
    const refused = await get(ACME, '/api/v1/auth/roles?name=gt.a', admin);
    expect(refused.status).toBe(422);
    expect(refused.body.errors[0].message).toMatch(/name takes eq, neq, in, contains, startsWith/);
  });
});

describe('the OpenAPI document', () => {
  it('declares a filter parameter per field on each of these lists', async () => {
    const doc = (await t.app.http(ACME).get('/api/v1/openapi.json')).body;
    const params = (path: string) => (doc.paths[path].get.parameters as { name: string }[]).map((p) => p.name);
    expect(params('/api/v1/webhook/deliveries')).toEqual(
      expect.arrayContaining(['endpointId', 'status', 'createdAt', 'or', 'fields']),
    );
    expect(params('/api/v1/tenant/tenants')).toEqual(expect.arrayContaining(['status', 'slug', 'q', 'or', 'fields']));
    expect(params('/api/v1/tenant/tenants')).not.toContain('hosts');
    expect(params('/api/v1/auth/tokens')).toEqual(expect.arrayContaining(['userId', 'expiresAt', 'or', 'fields']));
    expect(params('/api/v1/auth/roles')).toEqual(expect.arrayContaining(['name', 'permissions', 'or', 'fields']));
  });
});
