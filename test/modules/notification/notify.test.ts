import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { signInAs } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { notify, type Notice } from '../../../modules/notification/notify.ts';

const t = useTestApp({ customers: ['acme', 'globex'] });

const notice = (over: Partial<Notice> = {}): Notice => ({
  recipientId: randomUUID(),
  title: 'Hello',
  body: 'Some text',
  link: '/auth/reset',
  email: false,
  ...over,
});
const outbox = async (name: string) =>
  (await t.app.services.db.pool.query(`select payload, tenant_id from outbox where name = $1 order by id`, [name]))
    .rows;

describe('notify', () => {
  it('writes an unread notification of the tenant and publishes notification.created with identifiers only', async () => {
    const recipientId = randomUUID();
    const { id } = await t.app.services.transactions.run(t.acme, (ctx) => notify(ctx, notice({ recipientId })));
    const row = await t.app.services.transactions.run(t.acme, (ctx) =>
      ctx.db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirst(),
    );
    expect(row).toMatchObject({
      id,
      recipient_id: recipientId,
      title: 'Hello',
      body: 'Some text',
      link: '/auth/reset',
      read_at: null,
    });
    const other = await t.app.services.transactions.run(t.globex, (ctx) =>
      ctx.db.selectFrom('notifications').selectAll().execute(),
    );
    expect(other).toEqual([]);
    expect((await outbox('notification.created')).filter((r) => r.payload.id === id)).toEqual([
      { payload: { id, recipientId }, tenant_id: t.acme.id },
    ]);
  });

  it('has no foreign key on recipientId: a notice for an id that is no user is stored', async () => {
    const recipientId = randomUUID();
    const { id } = await t.app.services.transactions.run(t.acme, (ctx) =>
      notify(ctx, notice({ recipientId, email: true })),
    );
    expect(id).toBeTruthy();
    // Nobody to mail: the mail is not asked for.
    expect((await outbox('notification.email_requested')).filter((r) => r.payload.id === id)).toEqual([]);
  });

  it('refuses a link that is not a path within the application, and a title that is not one line of at most 200 characters', async () => {
    for (const link of [
      'https://evil.example/x',
      '//evil.example/x',
      'auth/reset',
      '',
      '/\\evil.example',
      'javascript:alert(1)',
      'mailto:a@b.c',
      '/a\nb',
    ]) {
      await expect(
        t.app.services.transactions.run(t.acme, (ctx) => notify(ctx, notice({ link }))),
        link,
      ).rejects.toMatchObject({
        code: 'VALIDATION_FAILED',
        message: expect.stringMatching(/path within the application/),
      });
    }
    for (const title of ['two\nlines', 'carriage\rreturn', '   ', 'x'.repeat(201)]) {
      await expect(
        t.app.services.transactions.run(t.acme, (ctx) => notify(ctx, notice({ title }))),
        title,
      ).rejects.toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringMatching(/one line of 1 to 200/) });
    }
    const { id } = await t.app.services.transactions.run(t.acme, (ctx) =>
      notify(ctx, notice({ title: 'y'.repeat(200), link: '/admin/task/tasks/1?x=1#y' })),
    );
    expect(id).toBeTruthy();
  });

  it('asks for mail with notification.email_requested only when the notice asks and the recipient has an address; the payload is two ids and a time', async () => {
    const person = await signInAs(t.app, t.acme, []);
    const mailed = await t.app.services.transactions.run(t.acme, (ctx) =>
      notify(ctx, notice({ recipientId: person.userId, email: true })),
    );
    const quiet = await t.app.services.transactions.run(t.acme, (ctx) =>
      notify(ctx, notice({ recipientId: person.userId, email: false })),
    );
    const requested = await outbox('notification.email_requested');
    expect(requested.filter((r) => r.payload.id === quiet.id)).toEqual([]);
    const [event] = requested.filter((r) => r.payload.id === mailed.id);
    expect(Object.keys(event.payload).sort()).toEqual(['id', 'recipientId', 'requestedAt']);
    expect(event.payload).toMatchObject({ id: mailed.id, recipientId: person.userId });
    expect(Number.isNaN(Date.parse(event.payload.requestedAt))).toBe(false);
    // No address, body, title or link travels in any event.
    const all = JSON.stringify(
      (await t.app.services.db.pool.query(`select payload from outbox where name like 'notification.%'`)).rows,
    );
    expect(all).not.toContain(person.email);
    expect(all).not.toContain('/auth/reset');
    expect(all).not.toContain('Some text');
  });
});
