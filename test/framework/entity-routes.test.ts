import { beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createCustomer, signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { withoutRequestId } from '../helpers/problems.ts';

const BASE = '/api/v1/testkit/widgets';
const HOST = 'routes.localhost';

let cookie: string;

const t = useTestApp();
beforeAll(async () => {
  const tenant = await createCustomer(t.app, 'routes', HOST);
  cookie = (await signInAs(t.app, tenant, ['widget:read', 'widget:write'])).cookie;
});

const http = () => t.app.http(HOST);
const get = (url: string) => http().get(url).set('Cookie', cookie);
const post = (url: string, body: object) => http().post(url).set('Cookie', cookie).send(body);
const patch = (url: string, body: object) => http().patch(url).set('Cookie', cookie).send(body);
const del = (url: string) => http().delete(url).set('Cookie', cookie);

async function createWidget(body: Record<string, unknown>): Promise<{ id: string; name: string; size: number }> {
  const res = await post(BASE, { size: 1, color: 'red', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Byte order, as PostgreSQL orders uuids and these ASCII names. */
const byId = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

async function storedRow(id: string): Promise<{ name: string; deleted_at: Date | null } | undefined> {
  const { rows } = await t.app.services.db.pool.query('select name, deleted_at from widgets where id = $1', [id]);
  return rows[0];
}

describe('list: one paging and sorting convention', () => {
  const names = ['list-e', 'list-a', 'list-d', 'list-b', 'list-c'];
  const sizes = [7, 3, 7, 3, 7];
  let created: { id: string; name: string; size: number }[];

  beforeAll(async () => {
    created = [];
    for (const [i, name] of names.entries()) created.push(await createWidget({ name, size: sizes[i]! }));
  });

  async function walk(sort: string, limit: number): Promise<string[]> {
    const ids: string[] = [];
    for (let offset = 0; ; offset += limit) {
      const res = await get(`${BASE}?limit=${limit}&offset=${offset}&sort=${encodeURIComponent(sort)}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ total: created.length, totalExact: true, limit, offset });
      expect(res.body.items.length).toBeLessThanOrEqual(limit);
      if (res.body.items.length === 0) break;
      ids.push(...res.body.items.map((w: { id: string }) => w.id));
    }
    return ids;
  }

  /** Follows next from the first page to the last, as a client paging by cursor does. */
  async function follow(sort: string, limit: number): Promise<string[]> {
    const ids: string[] = [];
    let after: string | null = null;
    for (let pages = 0; pages < 20; pages++) {
      const res = await get(`${BASE}?limit=${limit}&sort=${encodeURIComponent(sort)}${after ? `&after=${after}` : ''}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ total: created.length, totalExact: true, limit, offset: 0 });
      ids.push(...res.body.items.map((w: { id: string }) => w.id));
      after = res.body.next;
      if (after === null) return ids;
      expect(res.body.items).toHaveLength(limit);
    }
    throw new Error('next never became null');
  }

  it('answers items, total, totalExact, limit, offset and next with defaults limit 20, offset 0, sorted by createdAt', async () => {
    const res = await get(BASE);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 5, totalExact: true, limit: 20, offset: 0, next: null });
    expect(Object.keys(res.body).sort()).toEqual(['items', 'limit', 'next', 'offset', 'total', 'totalExact']);
    expect(res.body.items.map((w: { id: string }) => w.id)).toEqual(created.map((w) => w.id));
  });

  it('sorts ascending by a field, breaking ties by id, across pages without gaps or repeats', async () => {
    const expected = [...created].sort((a, b) => a.size - b.size || byId(a.id, b.id)).map((w) => w.id);
    expect(await walk('size', 2)).toEqual(expected);
    expect(await walk('size', 1)).toEqual(expected);
  });

  it('sorts descending with a leading "-", ties broken by id descending', async () => {
    const expected = [...created].sort((a, b) => b.size - a.size || byId(b.id, a.id)).map((w) => w.id);
    expect(await walk('-size', 2)).toEqual(expected);
    const byName = await walk('-name', 3);
    expect(byName).toEqual([...created].sort((a, b) => byId(b.name, a.name)).map((w) => w.id));
  });

  it('counts the total across all pages, also past the last page', async () => {
    const res = await get(`${BASE}?limit=2&offset=10`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], total: 5, totalExact: true, limit: 2, offset: 10, next: null });
  });

  it('pages by cursor: next leads through every row once, in the order offsets give, and is null on the last page', async () => {
    for (const sort of ['createdAt', '-createdAt', 'size', '-size', 'name', '-name', 'updatedAt']) {
      for (const limit of [1, 2, 5])
        expect(await follow(sort, limit), `${sort} by ${limit}`).toEqual(await walk(sort, limit));
    }
    const last = await get(`${BASE}?limit=5`);
    expect(last.body.next).toBeNull();
  });

  it('continues a cursor where it left off though rows were added before it', async () => {
    const first = await get(`${BASE}?limit=2&sort=name`);
    const early = await createWidget({ name: 'list-0', size: 1 });
    try {
      const second = await get(`${BASE}?limit=2&sort=name&after=${first.body.next}`);
      const expected = [...created].sort((a, b) => byId(a.name, b.name)).map((w) => w.id);
      expect(second.body.items.map((w: { id: string }) => w.id)).toEqual(expected.slice(2, 4));
    } finally {
      await del(`${BASE}/${early.id}`);
    }
  });

  it('refuses a cursor it did not give, or given for another sort, with 422 VALIDATION_FAILED, never a 500', async () => {
    const given = (await get(`${BASE}?limit=1&sort=size`)).body.next as string;
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const cases = [
      'not-a-cursor',
      forged({ sort: 'size' }),
      forged(['size', '3']),
      forged(['size', '3', 'not-a-uuid']),
      forged(['createdAt', 'yesterday', randomUUID()]),
      forged(['size', '99999999999999999999', randomUUID()]),
      forged(['size', 'three', randomUUID()]),
      forged(['size', null, randomUUID()]),
      'a'.repeat(1025),
    ];
    for (const after of cases) {
      const res = await get(`${BASE}?limit=1&sort=size&after=${after}`);
      expect(res.status, after).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.errors[0].pointer).toBe('/querystring/after');
    }
    const otherSort = await get(`${BASE}?limit=1&sort=-size&after=${given}`);
    expect(otherSort.status).toBe(422);
    expect(otherSort.body.detail).toMatch(/after was given for sort=size/);
  });

  it('bounds offset: past 10000 it is 422 pointing at after, and offset does not combine with after', async () => {
    expect((await get(`${BASE}?offset=10000`)).status).toBe(200);
    for (const offset of ['10001', '9223372036854775807']) {
      const res = await get(`${BASE}?offset=${offset}`);
      expect(res.status, offset).toBe(422);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.errors).toEqual([
        { pointer: '/querystring/offset', message: expect.stringContaining('after=<cursor>') },
      ]);
    }
    const next = (await get(`${BASE}?limit=1`)).body.next as string;
    const both = await get(`${BASE}?limit=1&offset=1&after=${next}`);
    expect(both.status).toBe(422);
    expect(both.body.errors).toEqual([
      { pointer: '/querystring/offset', message: 'must be 0 (or left out) with after' },
    ]);
  });

  it('refuses a sort key the list does not take, a limit out of range and an unknown parameter', async () => {
    // Every field a list filters by sorts it (issue 44): note and color sort, unindexed.
    for (const query of ['sort=note', 'sort=-color,name'])
      expect((await get(`${BASE}?${query}`)).status, query).toBe(200);
    for (const query of [
      'sort=colour',
      'sort=name,-name',
      'sort=',
      'limit=0',
      'limit=101',
      'offset=-1',
      'page=2',
      'after=',
    ]) {
      const res = await get(`${BASE}?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('VALIDATION_FAILED');
    }
  });
});

describe('soft delete', () => {
  it('keeps the row, hides it from list, read, PATCH, commands and a second DELETE, and releases its unique name', async () => {
    const widget = await createWidget({ name: 'soft-1' });
    const duplicate = await post(BASE, { name: 'soft-1', size: 1, color: 'red' });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.code).toBe('ALREADY_EXISTS');

    expect((await del(`${BASE}/${widget.id}`)).status).toBe(204);

    const stored = await storedRow(widget.id);
    expect(stored?.name).toBe('soft-1');
    expect(stored?.deleted_at).toBeInstanceOf(Date);

    const list = await get(`${BASE}?limit=100`);
    expect(list.body.items.map((w: { id: string }) => w.id)).not.toContain(widget.id);
    expect((await get(`${BASE}/${widget.id}`)).status).toBe(404);
    expect((await patch(`${BASE}/${widget.id}`, { size: 2 })).status).toBe(404);
    expect((await post(`${BASE}/${widget.id}/approve`, {})).status).toBe(404);
    expect((await del(`${BASE}/${widget.id}`)).status).toBe(404);

    const again = await createWidget({ name: 'soft-1' });
    expect(again.id).not.toBe(widget.id);
    expect((await storedRow(widget.id))?.deleted_at).toBeInstanceOf(Date);
  });

  it('leaves a soft-deleted row unchanged by a refused PATCH or command', async () => {
    const widget = await createWidget({ name: 'soft-2', size: 4 });
    await del(`${BASE}/${widget.id}`);
    await patch(`${BASE}/${widget.id}`, { size: 9 });
    await post(`${BASE}/${widget.id}/approve`, {});
    const { rows } = await t.app.services.db.pool.query('select size, approved from widgets where id = $1', [
      widget.id,
    ]);
    expect(rows[0]).toEqual({ size: 4, approved: false });
  });
});

describe('protected and unknown fields', () => {
  const OWNER = 'POST /api/v1/testkit/widgets/{id}/approve';

  it('refuses a create naming a command-owned field, naming the route that owns it, and stores nothing', async () => {
    for (const field of ['approved', 'approvedAt']) {
      const value = field === 'approved' ? true : new Date().toISOString();
      const res = await post(BASE, { name: `owned-${field}`, size: 1, color: 'red', [field]: value });
      expect(res.status).toBe(422);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'FIELD_COMMAND_OWNED', field, route: OWNER });
      expect(res.body.detail).toContain(OWNER);
    }
    const { rows } = await t.app.services.db.pool.query(`select 1 from widgets where name like 'owned-%'`);
    expect(rows).toHaveLength(0);
  });

  it('refuses a PATCH naming a command-owned field, naming the owning route, and changes nothing', async () => {
    const widget = await createWidget({ name: 'owned-patch', size: 2 });
    const res = await patch(`${BASE}/${widget.id}`, { size: 3, approved: true });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'FIELD_COMMAND_OWNED', field: 'approved', route: OWNER });
    const read = await get(`${BASE}/${widget.id}`);
    expect(read.body).toMatchObject({ size: 2, approved: false });
  });

  it('lets the owning command set the field', async () => {
    const widget = await createWidget({ name: 'owned-command' });
    const res = await post(`${BASE}/${widget.id}/approve`, {});
    expect(res.status).toBe(200);
    expect(res.body.approved).toBe(true);
    expect(typeof res.body.approvedAt).toBe('string');
  });

  it('accepts an immutable field on create and refuses it on PATCH, even unchanged', async () => {
    const widget = await createWidget({ name: 'immutable-1', color: 'blue' });
    for (const color of ['green', 'blue']) {
      const res = await patch(`${BASE}/${widget.id}`, { color });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ code: 'FIELD_IMMUTABLE', field: 'color' });
    }
    expect((await get(`${BASE}/${widget.id}`)).body.color).toBe('blue');
  });

  it('refuses system fields on create and PATCH', async () => {
    const widget = await createWidget({ name: 'system-1' });
    for (const field of ['id', 'createdAt', 'updatedAt']) {
      const value = field === 'id' ? randomUUID() : new Date().toISOString();
      expect((await post(BASE, { name: `system-${field}`, size: 1, color: 'red', [field]: value })).status).toBe(422);
      expect((await patch(`${BASE}/${widget.id}`, { [field]: value })).status).toBe(422);
    }
  });

  it('refuses unknown properties rather than dropping them, naming them in errors[]', async () => {
    const created = await post(BASE, { name: 'unknown-1', size: 1, color: 'red', shape: 'round' });
    expect(created.status).toBe(422);
    expect(created.body.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(created.body.errors)).toContain('shape');
    const { rows } = await t.app.services.db.pool.query(`select 1 from widgets where name = 'unknown-1'`);
    expect(rows).toHaveLength(0);

    const widget = await createWidget({ name: 'unknown-2' });
    const patched = await patch(`${BASE}/${widget.id}`, { size: 5, shape: 'round' });
    expect(patched.status).toBe(422);
    expect(JSON.stringify(patched.body.errors)).toContain('shape');
    expect((await get(`${BASE}/${widget.id}`)).body.size).toBe(1);

    const command = await post(`${BASE}/${widget.id}/approve`, { shape: 'round' });
    expect(command.status).toBe(422);
    expect((await get(`${BASE}/${widget.id}`)).body.approved).toBe(false);
  });

  it('refuses an empty PATCH and a body of the wrong type with a problem, never a stack', async () => {
    const widget = await createWidget({ name: 'wrong-1' });
    const empty = await patch(`${BASE}/${widget.id}`, {});
    expect(empty.status).toBe(422);
    const wrongType = await post(BASE, { name: 'wrong-2', size: 'big', color: 'red' });
    expect(wrongType.status).toBe(422);
    expect(wrongType.body.errors[0].pointer).toBe('/body/size');
    const malformed = await http()
      .post(BASE)
      .set('Cookie', cookie)
      .set('Content-Type', 'application/json')
      .send('{"name":');
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe('MALFORMED_REQUEST');
    expect(JSON.stringify(malformed.body)).not.toMatch(/at .*\.ts:\d+/);
  });
});

describe('one 404 for an unknown, a soft-deleted and a malformed id', () => {
  it('answers the same body on read, PATCH, DELETE and commands', async () => {
    const deleted = await createWidget({ name: 'gone-1' });
    await del(`${BASE}/${deleted.id}`);
    const ids = [randomUUID(), deleted.id, 'not-a-uuid', '1', `${randomUUID()}x`];
    const bodies = new Set<string>();
    for (const id of ids) {
      const responses = [
        await get(`${BASE}/${id}`),
        await patch(`${BASE}/${id}`, { size: 2 }),
        await del(`${BASE}/${id}`),
        await post(`${BASE}/${id}/approve`, {}),
      ];
      for (const res of responses) {
        expect(res.status, `${res.request.method} ${id}`).toBe(404);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        bodies.add(JSON.stringify(withoutRequestId(res.body)));
      }
    }
    expect([...bodies]).toEqual([
      JSON.stringify({
        type: 'https://tenantry.dev/problems/NOT_FOUND',
        title: 'Not found',
        status: 404,
        detail: 'No such resource',
        code: 'NOT_FOUND',
      }),
    ]);
  });
});
