import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { testkitModule } from '../../helpers/testkit-module.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { subscriptionQueue } from '../../../framework/events/relay.ts';
import { allModules } from '../../../modules/index.ts';
import { notificationModule } from '../../../modules/notification/index.ts';
import { notificationMail } from '../../../modules/notification/notification-mail.ts';
import { notify } from '../../../modules/notification/notify.ts';
import { SmtpSink } from '../user/smtp-sink.ts';
import { eventually } from '../user/support.ts';

/**
 * The mail subscription against a real SMTP server. Retries are shortened for the test (one retry
 * after a second); the subscription is otherwise the module's own.
 */
const sink = new SmtpSink();
let app: TestApp;
let acme: TenantRef;
let local: TenantRef;
let ann: SignedIn;
let refused: SignedIn;
let bob: SignedIn;

beforeAll(async () => {
  const port = await sink.start();
  const quickRetries = {
    ...notificationModule,
    subscriptions: [{ ...notificationMail, retryLimit: 1, retryDelay: 1 }],
  };
  const modules = [...allModules.map((m) => (m === notificationModule ? quickRetries : m)), testkitModule];
  app = await startTestApp({
    modules,
    role: 'all',
    startWorker: true,
    config: testConfig({ mail: { host: '127.0.0.1', port, from: 'Tenantry <no-reply@tenantry.test>' } }),
  });
  acme = await createCustomer(app, 'mail-acme', 'app.mail-acme.example');
  local = await createCustomer(app, 'mail-local', 'mail-local.localhost');
  ann = await signInAs(app, acme, [], { email: 'ann@mail-acme.test' });
  refused = await signInAs(app, acme, [], { email: 'refused-rex@mail-acme.test' });
  bob = await signInAs(app, local, [], { email: 'bob@mail-local.test' });
});
afterAll(async () => {
  await app?.close();
  await sink.stop();
});

const processed = async (eventName: string, notificationId: string) =>
  (
    await app.services.db.pool.query(
      `select 1 from processed_events p join outbox o on o.event_id = p.event_id
        where p.subscription = $1 and o.name = $2 and o.payload->>'id' = $3`,
      [notificationMail.name, eventName, notificationId],
    )
  ).rows.length > 0;

describe('the notification mail (notification.email_requested)', () => {
  it('mails the recipient plain text with the link made absolute on the tenant’s primary host, https for a public host', async () => {
    await app.services.transactions.run(acme, (ctx) =>
      notify(ctx, {
        recipientId: ann.userId,
        title: 'Task assigned to you: Renew',
        body: 'Please renew the certificate.',
        link: '/admin/task/tasks/42',
        email: true,
      }),
    );
    const [mail] = await eventually(
      async () => sink.to('ann@mail-acme.test').length > 0 && sink.to('ann@mail-acme.test'),
      15_000,
      'the notification mail',
    );
    expect(mail!.headers.subject).toBe('Task assigned to you: Renew');
    expect(mail!.headers['content-type']).toMatch(/^text\/plain/);
    expect(mail!.text).toContain('Please renew the certificate.');
    expect(mail!.text).toContain('https://app.mail-acme.example/admin/task/tasks/42');
  });

  it('uses plain http on a local host', async () => {
    await app.services.transactions.run(local, (ctx) =>
      notify(ctx, { recipientId: bob.userId, title: 'Hello', body: '', link: '/admin', email: true }),
    );
    const [mail] = await eventually(
      async () => sink.to('bob@mail-local.test').length > 0 && sink.to('bob@mail-local.test'),
      15_000,
      'the local mail',
    );
    expect(mail!.text).toMatch(/http:\/\/mail-local\.localhost(:\d+)?\/admin/);
  });

  it('skips a notification deleted before the mail went out', async () => {
    const before = sink.to('ann@mail-acme.test').length;
    const { id } = await app.services.transactions.run(acme, async (ctx) => {
      const created = await notify(ctx, {
        recipientId: ann.userId,
        title: 'Gone soon',
        body: 'x',
        link: '/admin',
        email: true,
      });
      await ctx.db.deleteFrom('notifications').where('id', '=', created.id).execute();
      return created;
    });
    await eventually(() => processed('notification.email_requested', id), 15_000, 'the delivery to be handled');
    expect(sink.to('ann@mail-acme.test')).toHaveLength(before);
  });

  it('a refusing mail server fails the subscription: it is retried, then dead-lettered', async () => {
    // From here on the server refuses every message.
    sink.reject = () => true;
    const { id } = await app.services.transactions.run(acme, (ctx) =>
      notify(ctx, { recipientId: refused.userId, title: 'Never arrives', body: 'x', link: '/admin', email: true }),
    );
    const event = (
      await app.services.db.pool.query(
        `select event_id::text as id from outbox where name = 'notification.email_requested' and payload->>'id' = $1`,
        [id],
      )
    ).rows[0];
    const letter = await eventually(
      async () =>
        (
          await app.services.db.pool.query(
            `select queue, event_id::text as event_id, tenant_id, name, error from dead_letters where event_id::text = $1`,
            [event.id],
          )
        ).rows[0],
      30_000,
      'the dead letter',
    );
    expect(letter).toMatchObject({
      queue: subscriptionQueue(notificationMail.name),
      event_id: event.id,
      tenant_id: acme.id,
      name: 'notification.email_requested',
    });
    expect(letter.error).toMatch(/after 2 attempts/);
    // The first attempt and its one retry both reached the server and were refused.
    expect(sink.refused.filter((a) => a === 'refused-rex@mail-acme.test')).toHaveLength(2);
    expect(await processed('notification.email_requested', id)).toBe(false);
  }, 60_000);
});
