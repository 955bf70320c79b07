import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { notify } from '../../../modules/notification/notify.ts';

let app: TestApp;
let acme: TenantRef;
let globex: TenantRef;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'acme');
  globex = await createCustomer(app, 'globex');
});
afterAll(async () => {
  await app?.close();
});

describe('notify', () => {
  it('writes an unread notification of the tenant and publishes notification.created with identifiers only', async () => {
    const recipientId = randomUUID();
    const { id } = await app.services.transactions.run(acme, (ctx) =>
      notify(ctx, { recipientId, title: 'Hello', body: 'Some text', link: '/auth/reset' }),
    );
    const row = await app.services.transactions.run(acme, (ctx) =>
      ctx.db.selectFrom('notifications' as never).selectAll().executeTakeFirst(),
    );
    expect(row).toMatchObject({ id, recipient_id: recipientId, title: 'Hello', body: 'Some text', link: '/auth/reset', read_at: null });
    const other = await app.services.transactions.run(globex, (ctx) => ctx.db.selectFrom('notifications' as never).selectAll().execute());
    expect(other).toEqual([]);
    const { rows } = await app.services.db.pool.query(`select payload, tenant_id from outbox where name = 'notification.created'`);
    expect(rows).toEqual([{ payload: { id, recipientId }, tenant_id: acme.id }]);
  });

  it('refuses a link that is not a path within the application, and a title of more than one line', async () => {
    const recipientId = randomUUID();
    for (const link of ['https://evil.example/x', '//evil.example/x', 'auth/reset']) {
      await expect(app.services.transactions.run(acme, (ctx) => notify(ctx, { recipientId, title: 'Hi', body: '', link }))).rejects.toThrow(/path within the application/);
    }
    await expect(app.services.transactions.run(acme, (ctx) => notify(ctx, { recipientId, title: 'two\nlines', body: '', link: '' }))).rejects.toThrow(/one non-empty line/);
  });
});
