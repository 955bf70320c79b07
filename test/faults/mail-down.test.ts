import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { subscriptionQueue } from '../../framework/events/relay.ts';
import { allModules } from '../../modules/index.ts';
import { notificationModule } from '../../modules/notification/index.ts';
import { notificationMail } from '../../modules/notification/notification-mail.ts';
import { notify } from '../../modules/notification/notify.ts';
import { SmtpSink } from '../modules/user/smtp-sink.ts';
import { eventually } from '../modules/user/support.ts';
import { npmRun } from '../e2e/processes.ts';

/**
 * Fault: mail down (issue 31, point 5). A mail the server refuses is retried, then dead-lettered;
 * the dead letter is visible to the operator (its count and last error on /ready, which stays
 * ready, and on the admin health page); `npm run dead-letters -- list` shows it and
 * `npm run dead-letters -- retry --all`, once the mail server accepts again, delivers it.
 * Retries are shortened for the test (one retry after a second).
 */
const sink = new SmtpSink();
let app: TestApp;
let acme: TenantRef;
let rex: SignedIn;
let settings: Record<string, string>;

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
  acme = await createCustomer(app, 'deadmail-acme');
  rex = await signInAs(app, acme, [], { email: 'rex@deadmail.test' });
  settings = { TENANTRY_DATABASE_URL: app.databaseUrl, TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost' };
});
afterAll(async () => {
  await app?.close();
  await sink.stop();
});

const letters = async () =>
  (
    await app.services.db.pool.query<{ id: string; queue: string; error: string }>(
      'select id::text as id, queue, error from dead_letters order by id',
    )
  ).rows;

describe('mail down: dead-lettered, visible, re-driven by npm run dead-letters', () => {
  it('a refused mail is retried, dead-lettered, shown on /ready and the health page, and delivered by retry --all', async () => {
    sink.reject = () => true;
    await app.services.transactions.run(acme, (ctx) =>
      notify(ctx, { recipientId: rex.userId, title: 'Delayed news', body: 'x', link: '/admin', email: true }),
    );
    const [letter] = await eventually(
      async () => {
        const found = await letters();
        return found.length > 0 && found;
      },
      30_000,
      'the dead letter',
    );
    expect(letter!.queue).toBe(subscriptionQueue(notificationMail.name));
    expect(sink.refused.filter((a) => a === 'rex@deadmail.test')).toHaveLength(2);

    // /ready stays ready and reports the letter.
    const ready = await app.http().get('/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ready');
    expect(ready.body.deadLetters).toMatchObject({ count: 1, lastError: letter!.error });
    expect(Date.parse(ready.body.deadLetters.lastFailedAt)).not.toBeNaN();

    // The operator's health page shows the count and the last error; a customer's does not.
    const operator = await signInAs(app, app.operator, ['*']);
    const page = await app.http().get('/admin/health').set('Cookie', operator.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<strong class="dead-letter-count">1<\/strong>/);
    expect(page.text).toContain('npm run dead-letters -- retry --all');
    const shownError = /<pre class="dead-letter-error">([^<]*)<\/pre>/.exec(page.text)?.[1];
    expect(shownError).toBeTruthy();
    expect(letter!.error).toContain(
      shownError!
        .replaceAll('&#39;', "'")
        .replaceAll('&quot;', '"')
        .replaceAll('&lt;', '<')
        .replaceAll('&gt;', '>')
        .replaceAll('&amp;', '&')
        .slice(0, 20),
    );
    const customerAdmin = await signInAs(app, acme, ['*']);
    const customerPage = await app
      .http('deadmail-acme.localhost')
      .get('/admin/health')
      .set('Cookie', customerAdmin.cookie);
    expect(customerPage.status).toBe(200);
    expect(customerPage.text).not.toContain('dead-letter');

    // The command lists it.
    const listed = await npmRun('dead-letters', ['list'], settings);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`${letter!.id}  `);
    expect(listed.stdout).toContain('notification.email_requested');
    expect(listed.stdout).toMatch(/^1 dead letter$/m);

    // The mail server is back: retry --all delivers the mail, and the letter is gone.
    sink.reject = () => false;
    const retried = await npmRun('dead-letters', ['retry', '--all'], settings);
    expect(retried.code, retried.stdout + retried.stderr).toBe(0);
    expect(retried.stdout).toContain(`${letter!.id}: retried`);
    await eventually(async () => sink.to('rex@deadmail.test').length > 0, 20_000, 'the re-driven mail');
    expect(sink.to('rex@deadmail.test')[0]!.headers.subject).toBe('Delayed news');
    expect(await letters()).toEqual([]);
    expect((await app.http().get('/ready')).body.deadLetters).toMatchObject({ count: 0, lastError: null });
  }, 60_000);

  it('refuses a usage error with 2, and an unknown id with 2', async () => {
    const usage = await npmRun('dead-letters', ['retry'], settings);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('usage: npm run dead-letters -- list | retry <id> | retry --all');
    const unknown = await npmRun('dead-letters', ['retry', '999999'], settings);
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toContain('999999: no such dead letter');
  }, 60_000);
});
