import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allModules } from '../../../modules/index.ts';
import { signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { hookControl, hooksModule } from './hooks-module.ts';
import { eventually, outboxEvents } from '../user/support.ts';

let app: TestApp;
let port: number;
let cookie: string;
beforeAll(async () => {
  app = await startTestApp({ modules: [...allModules, hooksModule] });
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  port = (app.web!.server.address() as AddressInfo).port;
  cookie = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
});

const openConnections = () =>
  new Promise<number>((resolve, reject) =>
    app.web!.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );

describe('a tenant handler commits even when the caller hangs up', () => {
  it('creates the tenant although the client disconnected mid-request', async () => {
    const reached = new Promise<void>((resolve) => (hookControl.reached = resolve));
    let release!: () => void;
    hookControl.release = new Promise<void>((resolve) => (release = resolve));

    const body = JSON.stringify({ slug: 'hold-gone', name: 'Gone', host: 'hold-gone.localhost' });
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/v1/tenant/tenants',
      headers: {
        host: 'operator.localhost',
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        cookie,
      },
    });
    let answered = false;
    req.on('response', () => (answered = true));
    req.on('error', () => {});
    req.end(body);

    // The handler is inside its transaction (in the creation hook): now the client goes away.
    await reached;
    req.destroy();
    await eventually(async () => (await openConnections()) === 0, 5000, 'the server to see the disconnect');
    release();

    const row = await eventually(
      async () => (await app.services.db.pool.query(`select id, status from tenants where slug = 'hold-gone'`)).rows[0],
      5000,
      'the tenant row',
    );
    expect(row.status).toBe('active');
    const host = await app.services.db.pool.query(
      `select is_primary from tenant_hosts where host = 'hold-gone.localhost'`,
    );
    expect(host.rows).toEqual([{ is_primary: true }]);
    expect((await outboxEvents(app, 'tenant.created')).some((e) => e.payload.id === row.id)).toBe(true);
    expect(answered).toBe(false);
  });
});
