import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { createCustomer, signInAs, type TestApp } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { notify } from '../../modules/notification/notify.ts';

/**
 * A tenant with something on every page of the admin shell, made through the API as a person's
 * browser would (and, for what only the service makes, through its own operations): plans in two
 * currencies, a subscription, tasks (one overdue, one finished past its date), files, a webhook
 * endpoint with its delivery log, notifications and an access token. For the browser tests of
 * issue 42 that look at every page as a person does.
 */
export interface ShellSample {
  tenant: TenantRef;
  host: string;
  /** The tenant's name as the header shows it. */
  tenantName: string;
  admin: { id: string; email: string; password: string; displayName: string };
  operatorAdmin: { id: string; email: string; password: string; displayName: string };
  plans: { eur: string; jpy: string };
  tasks: { overdue: string; finished: string; upcoming: string };
  endpointId: string;
  fileId: string;
}

const HOUR = 3_600_000;

/** A multipart body of one `file` part, as the upload route takes it. */
function multipart(name: string, type: string, text: string): { boundary: string; body: string } {
  const boundary = 'shell-sample-boundary';
  return {
    boundary,
    body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n${text}\r\n--${boundary}--\r\n`,
  };
}

export async function shellSample(app: TestApp, slug: string, options: { tasks?: number } = {}): Promise<ShellSample> {
  const host = `${slug}.localhost`;
  const tenant = await createCustomer(app, slug, host);
  const admin = {
    displayName: 'Ada Admin',
    ...(await addUser(app, tenant, { roles: ['admin'], password: 'acme admin password', displayName: 'Ada Admin' })),
  };
  const operatorAdmin = {
    displayName: 'Olivia Operator',
    ...(await addUser(app, app.operator, {
      roles: ['admin'],
      password: 'operator password',
      displayName: 'Olivia Operator',
      email: `olivia-${slug}@operator.test`,
    })),
  };
  const operator = (await signInAs(app, app.operator, ['billing:catalog', 'billing:read'])).cookie;
  const plan = async (code: string, name: string, price: number, currency: string) => {
    const res = await app
      .http()
      .post('/api/v1/billing/plans')
      .set('Cookie', operator)
      .send({
        code,
        name,
        price,
        currency,
        interval: 'month',
        features: ['webhook.endpoints', 'file.public_links'],
        active: true,
      });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as string;
  };
  const plans = {
    eur: await plan(`team-${slug}`, 'Team', 900, 'EUR'),
    jpy: await plan(`yen-${slug}`, 'Yen', 900, 'JPY'),
  };

  const login = await app.http(host).post('/api/v1/auth/login').send({ email: admin.email, password: admin.password });
  const cookie = login.headers['set-cookie']![0]!.split(';', 1)[0]!;
  const api = (method: 'post' | 'patch', path: string, body: object, status = 201) =>
    app
      .http(host)
      [method](path)
      .set('Cookie', cookie)
      .send(body)
      .then((res) => {
        expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(status);
        return res.body as { id: string };
      });

  await api('post', '/api/v1/billing/subscription/subscribe', { planId: plans.eur }, 200);
  const now = Date.now();
  const task = (title: string, deadline: number, priority = 'medium') =>
    api('post', '/api/v1/task/tasks', { title, priority, deadline: new Date(deadline).toISOString() });
  for (let i = 1; i <= (options.tasks ?? 3); i++)
    await task(`Follow up on ticket #${4100 + i}`, now + (i + 2) * 24 * HOUR, 'low');
  const upcoming = (await task('Plan the quarterly review', now + 30 * 24 * HOUR)).id;
  // Past its date too, but resolved: finished tasks are not overdue.
  const finished = (await task('Close the March books', now - 3 * HOUR)).id;
  // A deadline already passed when made: the task is overdue from the start.
  const overdue = (await task('Call the customer back', now - 2 * HOUR, 'high')).id;
  await api('post', `/api/v1/task/tasks/${finished}/resolve`, { resolution: 'Booked and checked.' }, 200);

  const upload = multipart('price-list-2026-with-a-rather-long-name.txt', 'text/plain', 'Starter 9 EUR\n');
  const file = await app
    .http(host)
    .post('/api/v1/file/files?visibility=public')
    .set('Cookie', cookie)
    .set('Content-Type', `multipart/form-data; boundary=${upload.boundary}`)
    .send(upload.body);
  expect(file.status, JSON.stringify(file.body)).toBe(201);

  const endpoint = await api('post', '/api/v1/webhook/endpoints', {
    url: 'https://hooks.example.com/a/rather/long/path/for/the/tenantry/endpoint',
    events: ['task.task.created', 'task.sla_breached'],
  });
  await app.services.transactions.run(tenant, async (tx) => {
    for (const [attempt, status, httpStatus, error] of [
      [1, 'failed', 500, 'the receiver answered 500'],
      [2, 'succeeded', 204, null],
    ] as const) {
      await tx.db
        .insertInto('webhook_deliveries')
        .values({
          endpoint_id: endpoint.id,
          message_id: `msg_${attempt}`,
          event_type: 'task.task.created',
          message_created_at: new Date(now - HOUR),
          data: { id: overdue },
          attempt,
          status,
          http_status: httpStatus,
          duration_ms: 120,
          error,
        })
        .execute();
    }
    for (const title of ['Task assigned to you: Call the customer back', 'Password reset requested'])
      await notify(tx, {
        recipientId: admin.id,
        title,
        body: `About ${title}.`,
        link: '/admin/task/tasks',
        email: false,
      });
  });
  await api('post', '/api/v1/auth/tokens', { name: 'Nightly export', expiresInDays: 30, permissions: ['task:read'] });

  return {
    tenant,
    host,
    tenantName: `Customer ${slug}`,
    admin,
    operatorAdmin,
    plans,
    tasks: { overdue, finished, upcoming },
    endpointId: endpoint.id,
    fileId: file.body.id as string,
  };
}

/** How far the page is wider than the window (0: nothing scrolls sideways). */
export const sideways = (page: Page): Promise<number> =>
  page.evaluate(() => {
    const { document, innerWidth } = globalThis as unknown as {
      document: { documentElement: { scrollWidth: number } };
      innerWidth: number;
    };
    return Math.max(0, document.documentElement.scrollWidth - innerWidth);
  });

export const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
] as const;
