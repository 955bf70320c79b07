import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { sessionFormToken } from '../../framework/access/form-token.ts';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';

/**
 * A client's 4xx is not an error: an admin form posted for an id that does not exist answers its
 * 404 page, and the log holds no error-level line (no "admin error page failed", no stack) for it.
 * Only a server's failure (5xx) is logged at error level.
 */

const HOST = 'logs.localhost';
const lines: Record<string, unknown>[] = [];
let app: TestApp;
let admin: SignedIn;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  app = await startTestApp({ logger: pino({ level: 'info' }, sink) as FastifyBaseLogger });
  admin = await signInAs(app, await createCustomer(app, 'logs', HOST), ['*']);
});
afterAll(async () => {
  await app?.close();
});
beforeEach(() => {
  lines.length = 0;
});

const ERROR = 50;
const errorLines = () => lines.filter((l) => (l.level as number) >= ERROR);

const post = (path: string, form: Record<string, string>) =>
  app
    .http(HOST)
    .post(path)
    .set('Cookie', admin.cookie)
    .type('form')
    .send({ csrf: sessionFormToken(admin.rawSessionId), ...form });

describe('an admin form posted for an unknown id', () => {
  const unknown = `/admin/task/tasks/${randomUUID()}`;

  it('answers the 404 page and logs no error, whatever the form holds', async () => {
    for (const [path, form] of [
      [`${unknown}/edit`, { title: 'Renamed' }],
      // A form the checker refuses (422) first: the form page shown again must read the row, which is not there.
      [`${unknown}/edit`, { title: '', priority: 'nonsense' }],
      [`${unknown}/assign`, { assigneeId: 'not-an-id' }],
      [`${unknown}/assign`, { assigneeId: admin.userId }],
      [`${unknown}/delete`, {}],
    ] as const) {
      const res = await post(path, form);
      expect(res.status, `${path} ${JSON.stringify(form)}`).toBe(404);
      expect(res.headers['content-type'], path).toMatch(/^text\/html/);
      expect(res.text, path).toContain('data-code="NOT_FOUND"');
      // The shell's own 404 page, not the bare last-resort page.
      expect(res.text, path).toContain('<h1>Not found</h1>');
    }
    expect(errorLines().map((l) => `${String(l.msg)}: ${JSON.stringify(l.err ?? {})}`)).toEqual([]);
  });
});
