import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { eventually, storedUser } from './support.ts';

const PASSWORD = 'PlainPassword-7f3a';
const logLines: string[] = [];
let testApp: TestApp;

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  // The most talkative log level, so whatever any layer logs is searched.
  testApp = await startTestApp({
    role: 'all',
    startWorker: true,
    logger: pino({ level: 'trace' }, sink) as FastifyBaseLogger,
  });
});
afterAll(async () => {
  await testApp?.close();
});

describe('the password hash appears nowhere', () => {
  it('not in responses, the OpenAPI document, the catalog, events, the audit trail or the logs', async () => {
    const acme = await createCustomer(testApp, 'acme');
    const manager = await signInAs(testApp, acme, ['user:read', 'user:manage']);
    const http = testApp.http('acme.localhost');
    const invited = await http
      .post('/api/v1/user/invitations')
      .set('Cookie', manager.cookie)
      .send({ email: 'ann@acme.test' });
    const id = invited.body.id;
    const answers = [
      invited,
      await http
        .post(`/api/v1/user/users/${id}/set-password`)
        .set('Cookie', manager.cookie)
        .send({ password: PASSWORD }),
      await http
        .post(`/api/v1/user/users/${id}/set-password`)
        .set('Cookie', manager.cookie)
        .send({ password: PASSWORD }),
      await http.get(`/api/v1/user/users/${id}`).set('Cookie', manager.cookie),
      await http.get('/api/v1/user/users').set('Cookie', manager.cookie),
      await http.patch(`/api/v1/user/users/${id}`).set('Cookie', manager.cookie).send({ displayName: 'Ann' }),
      await http
        .post(`/api/v1/user/users/${id}/roles`)
        .set('Cookie', manager.cookie)
        .send({ roles: ['member'] }),
      await http.post('/api/v1/auth/login').send({ email: 'ann@acme.test', password: PASSWORD }),
      await http.get('/api/v1/admin/resources').set('Cookie', manager.cookie),
      await http.get('/api/v1/openapi.json'),
      await http.get('/auth/reset'),
      await http.post(`/api/v1/user/users/${id}/deactivate`).set('Cookie', manager.cookie),
    ];
    const hash = (await storedUser(testApp, acme, id))!.password_hash!;
    expect(hash).toMatch(/^\$argon2id\$/);
    const secretParts = [hash, hash.split('$').at(-1)!, PASSWORD];

    for (const res of answers) {
      const text = JSON.stringify(res.body) + (res.text ?? '') + JSON.stringify(res.headers);
      for (const secret of secretParts) expect(text).not.toContain(secret);
      expect(text).not.toMatch(/password_?hash|\$argon2/i);
    }
    expect(answers[1]!.status).toBe(200);
    expect(answers[7]!.status).toBe(200);

    // Wait until the worker recorded every event in the audit trail, then search it and the outbox.
    await eventually(
      async () =>
        Number(
          (
            await testApp.services.db.pool.query(
              'select count(*) as n from outbox where event_id not in (select event_id from audit_events)',
            )
          ).rows[0].n,
        ) === 0,
      15_000,
      'the audit recorder',
    );
    const { rows } = await testApp.services.db.pool.query(
      `select payload::text as p from outbox union all select payload::text from audit_events`,
    );
    const events = rows.map((r: { p: string }) => r.p).join('\n');
    expect(events).toContain(id);
    for (const secret of secretParts) expect(events).not.toContain(secret);

    const logs = logLines.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of secretParts) expect(logs).not.toContain(secret);
  });
});
