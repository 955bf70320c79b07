import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Issue 44, point 3: a value outside an enum is refused once, with the values that would be
 * accepted, wherever the enum is (a body, a query string), rather than once per value as "must be
 * equal to constant".
 */
const t = useTestApp({ customers: ['acme'] });

describe('an enum refusal names the allowed values', () => {
  it('in a body: one error for the field, listing its values', async () => {
    const { cookie } = await signInAs(t.app, t.acme, ['task:read', 'task:update']);
    const res = await t.app
      .http('acme.localhost')
      .post('/api/v1/task/tasks')
      .set('Cookie', cookie)
      .send({ title: 'x', priority: 'urgent', deadline: new Date(Date.now() + 86_400_000).toISOString() });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.errors).toEqual([
      { pointer: '/body/priority', message: 'must be one of "low", "medium", "high", "critical"' },
    ]);
    expect(JSON.stringify(res.body)).not.toMatch(/equal to constant/);
  });

  it('in a query string: the same', async () => {
    const { cookie } = await signInAs(t.app, t.acme, ['file:read', 'file:manage']);
    const res = await t.app
      .http('acme.localhost')
      .post('/api/v1/file/files?visibility=secret')
      .set('Cookie', cookie)
      .set('Content-Type', 'multipart/form-data; boundary=x')
      .set('Content-Length', '6')
      .send('--x--\r\n'.slice(0, 6));
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { pointer: '/querystring/visibility', message: 'must be one of "public", "private"' },
    ]);
  });
});
