import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Issue 41, point 8 ("Integers"): an integer in the query string is decimal digits only. Read as
 * JavaScript reads text, `limit=1.5` was 1, `limit=0x10` 16 and `limit=1e2` 100; each is now 422
 * with a pointer at the parameter, on generated and hand-written lists alike.
 */
const t = useTestApp({ customers: ['digits'] });
const HOST = 'digits.localhost';

describe('integers in the query are decimal digits only', () => {
  it('refuses limit=1.5, 0x10, 1e2 and their like with 422 and a pointer; offset the same', async () => {
    const who = await signInAs(t.app, t.digits, ['task:read', 'file:read']);
    const http = t.app.http(HOST);
    const cases: [string, string][] = [
      ['limit', '1.5'],
      ['limit', '0x10'],
      ['limit', '1e2'],
      ['limit', '+5'],
      ['limit', ' 5'],
      ['limit', '5 '],
      ['limit', '0b11'],
      ['limit', '1_0'],
      ['limit', 'Infinity'],
      ['offset', '0x10'],
      ['offset', '1e2'],
      ['offset', '2.0'],
    ];
    for (const list of ['/api/v1/task/tasks', '/api/v1/file/files']) {
      for (const [name, text] of cases) {
        const res = await http.get(`${list}?${name}=${encodeURIComponent(text)}`).set('Cookie', who.cookie);
        expect(res.status, `${list} ${name}=${text}`).toBe(422);
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.body.code).toBe('VALIDATION_FAILED');
        expect(res.body.errors).toEqual([
          {
            pointer: `/querystring/${name}`,
            message: 'must be an integer written in decimal digits (0-9, a leading - for a negative one)',
          },
        ]);
      }
    }
  });

  it('takes decimal digits as before: the page size and offset asked for, and the range rules still apply', async () => {
    const who = await signInAs(t.app, t.digits, ['task:read']);
    const http = t.app.http(HOST);
    const ok = await http.get('/api/v1/task/tasks?limit=16&offset=0').set('Cookie', who.cookie);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ limit: 16, offset: 0 });
    const negative = await http.get('/api/v1/task/tasks?limit=-1').set('Cookie', who.cookie);
    expect(negative.status).toBe(422);
    expect(negative.body.errors[0].pointer).toBe('/querystring/limit');
    expect(negative.body.errors[0].message).not.toContain('decimal digits');
  });
});
