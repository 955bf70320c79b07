import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import type { MemoryMailbox } from '../../../framework/mail/mailer.ts';
import { addUser, waitFor } from './fixtures.ts';
import { formatDateTime } from '../../../framework/format.ts';

const logLines: string[] = [];
let app: TestApp;
let acme: TenantRef;
let shop: TenantRef;
let mailbox: MemoryMailbox;
beforeAll(async () => {
  // Everything the service logs, at every level, is kept for the raw-token search below.
  const logger = pino(
    { level: 'trace' },
    { write: (line: string) => void logLines.push(line) },
  ) as unknown as FastifyBaseLogger;
  app = await startTestApp({ role: 'all', startWorker: true, logger });
  acme = await createCustomer(app, 'acme');
  // A second, non-primary host: links must still be built on the primary one.
  await app.services.db.pool.query(`insert into tenant_hosts (host, tenant_id) values ('www.acme.localhost', $1)`, [
    acme.id,
  ]);
  shop = await createCustomer(app, 'shop', 'shop.example.com');
  mailbox = app.services.mailer as MemoryMailbox;
});
afterAll(async () => {
  await app?.close();
});

const mailsTo = (email: string) => mailbox.messages.filter((m) => m.to === email);

async function forgot(host: string, email: string, source: string): Promise<void> {
  const res = await app.http(host).post('/api/v1/auth/password/forgot').set('X-Forwarded-For', source).send({ email });
  expect(res.status).toBe(202);
}

/** Waits until the worker has handled every event so far (audit recorded for each outbox row). */
async function settled(): Promise<void> {
  await waitFor(async () => {
    const { rows } = await app.services.db.pool.query<{ pending: number }>(
      `select (select count(*) from outbox where relayed_at is null)
            + (select count(*) from pgboss.job where state in ('created', 'retry', 'active')) as pending`,
    );
    return Number(rows[0]!.pending) === 0;
  }, 'the worker to drain');
}

function linkIn(text: string): URL {
  const match = /https?:\/\/\S+/.exec(text);
  if (!match) throw new Error(`no link in ${text}`);
  return new URL(match[0]);
}

describe('auth.reset_requested subscription', () => {
  it("mails an active user a link on the tenant's primary host at /auth/reset, and notifies them without the token", async () => {
    const user = await addUser(app, acme, { displayName: 'Ada' });
    await forgot('www.acme.localhost', user.email, '192.0.2.1');
    const [mail] = await waitFor(async () => mailsTo(user.email).length === 1 && mailsTo(user.email), 'the reset mail');
    const link = linkIn(mail!.text);
    expect(`${link.protocol}//${link.host}${link.pathname}`).toBe(
      `http://acme.localhost:${app.config.server.port}/auth/reset`,
    );
    expect(link.searchParams.get('token')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(mail!.text).toContain('Hello Ada');
    // Until when the link works, as pages say a date and with the zone (issue 42, point 4).
    // The mail leaves inside the subscription's transaction: its token row is there once it commits.
    const expiresAt = await waitFor(async () => {
      const found = await app.services.db.pool.query<{ expires_at: Date }>(
        'select expires_at from set_password_tokens where user_id = $1',
        [user.id],
      );
      return found.rows[0]?.expires_at ?? false;
    }, 'the token row');
    expect(mail!.text).toContain(`Open this link by ${formatDateTime(expiresAt)} (within 24 hours)`);
    expect(mail!.text).toMatch(/by \d{1,2} [A-Z][a-z]{2,3} \d{4}, \d{2}:\d{2} UTC/);
    // The mail leaves inside the subscription's transaction; its rows are there once it commits.
    await settled();
    const rows = await waitFor(async () => {
      const found = await app.services.db.pool.query(
        'select recipient_id, title, body, link, read_at from notifications where recipient_id = $1',
        [user.id],
      );
      return found.rows.length > 0 && found.rows;
    }, 'the notification');
    expect(rows).toHaveLength(1);
    expect(rows[0].link).toBe('/auth/reset');
    expect(rows[0].read_at).toBeNull();
    expect(JSON.stringify(rows[0])).not.toContain(link.searchParams.get('token')!);
    const created = await app.services.db.pool.query(
      `select payload from outbox where name = 'notification.created' and payload->>'recipientId' = $1`,
      [user.id],
    );
    expect(created.rows.map((r) => Object.keys(r.payload).sort())).toEqual([['id', 'recipientId']]);
  });

  it('builds an https link on a public primary host', async () => {
    const user = await addUser(app, shop);
    await forgot('shop.example.com', user.email, '192.0.2.2');
    const [mail] = await waitFor(async () => mailsTo(user.email).length === 1 && mailsTo(user.email), 'the reset mail');
    expect(linkIn(mail!.text).origin).toBe('https://shop.example.com');
  });

  it('sends nobody a second link within 5 minutes, and sends one again after', async () => {
    const user = await addUser(app, acme);
    await forgot('acme.localhost', user.email, '192.0.2.3');
    const [first] = await waitFor(
      async () => mailsTo(user.email).length === 1 && mailsTo(user.email),
      'the first mail',
    );
    await settled();
    await forgot('acme.localhost', user.email, '192.0.2.3');
    await settled();
    expect(mailsTo(user.email)).toHaveLength(1);
    // The first link still works: no second token replaced it.
    const token = linkIn(first!.text).searchParams.get('token')!;
    await app.services.db.pool.query(
      `update set_password_tokens set sent_at = sent_at - interval '5 minutes 1 second' where user_id = $1`,
      [user.id],
    );
    await forgot('acme.localhost', user.email, '192.0.2.3');
    await waitFor(async () => mailsTo(user.email).length === 2, 'the second mail');
    // The new link replaced the old one.
    const res = await app
      .http('acme.localhost')
      .post('/api/v1/auth/password/reset')
      .send({ token, password: 'the new password' });
    expect(res.status).toBe(401);
  });

  it('mails nobody for an unknown address, an invited or a deactivated user', async () => {
    const invited = await addUser(app, acme, { status: 'invited', password: null });
    const deactivated = await addUser(app, acme, { status: 'deactivated' });
    const before = mailbox.messages.length;
    for (const email of ['nobody@example.test', invited.email, deactivated.email])
      await forgot('acme.localhost', email, '192.0.2.4');
    await settled();
    expect(mailbox.messages.length).toBe(before);
    const { rows } = await app.services.db.pool.query(
      'select count(*)::int as n from set_password_tokens where user_id = any($1)',
      [[invited.id, deactivated.id]],
    );
    expect(rows[0].n).toBe(0);
  });
});

describe('the raw token', () => {
  it('is in no row, outbox payload, event, audit record or log line after a full reset', async () => {
    const user = await addUser(app, acme);
    await forgot('acme.localhost', user.email, '192.0.2.5');
    const [mail] = await waitFor(async () => mailsTo(user.email).length === 1 && mailsTo(user.email), 'the reset mail');
    const link = linkIn(mail!.text);
    const token = link.searchParams.get('token')!;
    await settled();
    // The browser opens the link, then the page posts the form.
    const page = await app.http('acme.localhost').get(`${link.pathname}${link.search}`);
    expect(page.status).toBe(200);
    const reset = await app
      .http('acme.localhost')
      .post('/api/v1/auth/password/reset')
      .send({ token, password: 'the new password' });
    expect(reset.status).toBe(204);
    await settled();
    const audited = await app.services.db.pool.query(
      `select name from audit_events where payload->>'userId' = $1 order by recorded_at`,
      [user.id],
    );
    expect(audited.rows.map((r) => r.name)).toEqual(
      expect.arrayContaining(['auth.reset_requested', 'auth.password_reset']),
    );

    const variants = [
      token,
      Buffer.from(token, 'base64url').toString('hex'),
      Buffer.from(token, 'base64url').toString('base64'),
    ];
    const { rows: tables } = await app.services.db.pool.query<{ schema: string; name: string }>(
      `select table_schema as schema, table_name as name from information_schema.tables
        where table_schema in ('public', 'pgboss') and table_type = 'BASE TABLE'`,
    );
    expect(tables.map((t) => t.name)).toEqual(
      expect.arrayContaining(['outbox', 'audit_events', 'set_password_tokens', 'notifications', 'sessions']),
    );
    for (const table of tables) {
      const { rows } = await app.services.db.pool.query<{ t: string }>(
        `select t::text as t from "${table.schema}"."${table.name}" t`,
      );
      const text = rows.map((r) => r.t).join('\n');
      for (const variant of variants)
        expect(text.includes(variant), `${table.schema}.${table.name} holds the token`).toBe(false);
    }
    expect(logLines.length).toBeGreaterThan(0);
    const log = logLines.join('');
    expect(log).toContain('/auth/reset');
    for (const variant of variants) expect(log.includes(variant), 'the log holds the token').toBe(false);
  });
});

describe('two deliveries at once', () => {
  it('send one person one link', async () => {
    const user = await addUser(app, acme);
    // Two requests in quick succession: the subscription may run them side by side.
    await Promise.all([
      forgot('acme.localhost', user.email, '192.0.2.6'),
      forgot('acme.localhost', user.email, '192.0.2.7'),
    ]);
    await settled();
    expect(mailsTo(user.email)).toHaveLength(1);
  });
});
