import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Issue 41, point 8 ("Enum refusals"): an enum is published as one `enum`, never as `anyOf` single
 * values, and a refused value hears which values are allowed, once, instead of "must be equal to
 * constant" per value plus "must match a schema in anyOf". Sort keys likewise.
 */
const t = useTestApp({ customers: ['enums'] });
const HOST = 'enums.localhost';
const TASKS = '/api/v1/task/tasks';

type Json = Record<string, unknown>;

/** Every place in a JSON document where an anyOf is made only of single values (const, or a one-value enum). */
function unionsOfSingleValues(node: unknown, at = ''): string[] {
  if (Array.isArray(node)) return node.flatMap((item, i) => unionsOfSingleValues(item, `${at}/${i}`));
  if (typeof node !== 'object' || node === null) return [];
  const schema = node as Json;
  const found: string[] = [];
  const members = schema.anyOf as Json[] | undefined;
  if (
    Array.isArray(members) &&
    members.length > 0 &&
    members.every((m) => 'const' in m || (Array.isArray(m.enum) && m.enum.length === 1))
  )
    found.push(at);
  for (const [key, value] of Object.entries(schema)) found.push(...unionsOfSingleValues(value, `${at}/${key}`));
  return found;
}

describe('a value outside an enum is refused once, naming the allowed values', () => {
  it('a task’s priority: "must be one of: low, medium, high, critical", whatever was sent', async () => {
    const who = await signInAs(t.app, t.enums, ['task:read', 'task:update']);
    for (const priority of ['urgent', 5, null]) {
      const res = await t.app
        .http(HOST)
        .post(TASKS)
        .set('Cookie', who.cookie)
        .send({ title: 'Enum', priority, deadline: '2031-01-01T00:00:00Z' });
      expect(res.status, String(priority)).toBe(422);
      expect(res.body.errors).toEqual([
        { pointer: '/body/priority', message: 'must be one of: low, medium, high, critical' },
      ]);
    }
  });

  it('PATCH of a status names the statuses (a PATCH body too)', async () => {
    const who = await signInAs(t.app, t.enums, ['task:read', 'task:update']);
    const created = await t.app
      .http(HOST)
      .post(TASKS)
      .set('Cookie', who.cookie)
      .send({ title: 'Status', priority: 'low', deadline: '2031-01-01T00:00:00Z' });
    const res = await t.app
      .http(HOST)
      .patch(`${TASKS}/${created.body.id}`)
      .set('Cookie', who.cookie)
      .send({ status: 'done' });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { pointer: '/body/status', message: 'must be one of: open, acknowledged, in_progress, resolved, closed' },
    ]);
  });

  it('a list’s sort names the sort keys it takes', async () => {
    const who = await signInAs(t.app, t.enums, ['task:read']);
    // Every filterable field sorts (issue 44), priority too: a key that is no field is refused.
    const res = await t.app.http(HOST).get(`${TASKS}?sort=urgency`).set('Cookie', who.cookie);
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([{ pointer: '/querystring/sort', message: expect.any(String) }]);
    const message = res.body.errors[0].message as string;
    expect(message).toMatch(/^sort takes /);
    for (const key of ['createdAt', 'updatedAt', 'title', 'status', 'priority', 'deadline'])
      expect(message.split(/[ ,]+/), key).toContain(key);
    expect(message).not.toMatch(/equal to constant/);
  });

  it('a query parameter of a hand-written route (an upload’s visibility) the same way', async () => {
    const who = await signInAs(t.app, t.enums, ['file:manage']);
    const res = await t.app
      .http(HOST)
      .post('/api/v1/file/files?visibility=secret')
      .set('Cookie', who.cookie)
      .attach('file', Buffer.from('hello'), { filename: 'a.txt', contentType: 'text/plain' });
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { pointer: '/querystring/visibility', message: 'must be one of: public, private' },
    ]);
  });
});

describe('enums are published as one enum', () => {
  it('the OpenAPI document has no anyOf of single values; a task’s priority and status are one enum of strings', async () => {
    const doc = (await t.app.http(HOST).get('/api/v1/openapi.json')).body;
    expect(unionsOfSingleValues(doc)).toEqual([]);
    const { TaskCreate, Task, File } = doc.components.schemas;
    expect(TaskCreate.properties.priority).toMatchObject({
      type: 'string',
      enum: ['low', 'medium', 'high', 'critical'],
    });
    expect(TaskCreate.properties.status).toMatchObject({
      type: 'string',
      enum: ['open', 'acknowledged', 'in_progress', 'resolved', 'closed'],
    });
    expect(Task.properties.priority).toMatchObject({ type: 'string', enum: ['low', 'medium', 'high', 'critical'] });
    expect(File.properties.visibility).toMatchObject({ type: 'string', enum: ['public', 'private'] });
  });

  it('the catalog’s row schemas too', async () => {
    const who = await signInAs(t.app, t.enums, ['*']);
    const res = await t.app.http(HOST).get('/api/v1/admin/resources').set('Cookie', who.cookie);
    expect(res.status).toBe(200);
    expect(unionsOfSingleValues(res.body)).toEqual([]);
    const task = res.body.resources.find((r: { key: string }) => r.key === 'task.task');
    expect(task.schema.properties.priority).toMatchObject({
      type: 'string',
      enum: ['low', 'medium', 'high', 'critical'],
    });
  });
});
