import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { createMailer, MemoryMailbox, SmtpMailer } from '../../../framework/mail/mailer.ts';
import { invitationMail } from '../../../modules/auth/invitation-mail.ts';
import { inviteUser } from '../../../modules/user/invite.ts';
import { SmtpSink, linkIn } from '../user/smtp-sink.ts';
import { eventually, storedUser } from '../user/support.ts';

const sink = new SmtpSink();
let app: TestApp;
let acme: TenantRef;
let manager: string;
let operatorCookie: string;

beforeAll(async () => {
  const port = await sink.start();
  app = await startTestApp({
    role: 'all',
    startWorker: true,
    config: testConfig({ mail: { host: '127.0.0.1', port, from: 'Tenantry <no-reply@tenantry.test>' } }),
  });
  // The primary host is a public name: the link must be https on it, whichever host the invitation came through.
  acme = await createCustomer(app, 'acme', 'app.acme.example');
  await app.services.db.pool.query(
    `insert into tenant_hosts (host, tenant_id, is_primary) values ('acme.localhost', $1, false)`,
    [acme.id],
  );
  manager = (await signInAs(app, acme, ['user:manage'])).cookie;
  operatorCookie = (await signInAs(app, app.operator, ['tenant:manage'])).cookie;
});
afterAll(async () => {
  await app?.close();
  await sink.stop();
});

const tokensOf = async (tenant: TenantRef, userId: string) =>
  app.services.transactions.run(
    tenant,
    async (ctx) =>
      (
        await ctx.db.executeQuery<{ used_at: Date | null }>(
          CompiledQuery.raw('select used_at from set_password_tokens where user_id = $1', [userId]),
        )
      ).rows,
  );

describe('the invitation mail', () => {
  it('is delivered over SMTP to the invited address with a link on the tenant’s primary host, redeemable once', async () => {
    expect(app.services.mailer).toBeInstanceOf(SmtpMailer);
    const invited = await app
      .http('acme.localhost')
      .post('/api/v1/user/invitations')
      .set('Cookie', manager)
      .send({ email: 'Ann@Acme.test', displayName: 'Ann' });
    expect(invited.status).toBe(201);

    const [mail] = await eventually(
      async () => sink.to('Ann@Acme.test').length > 0 && sink.to('Ann@Acme.test'),
      15_000,
      'the invitation mail',
    );
    expect(mail!.envelopeTo.map((a) => a.toLowerCase())).toEqual(['ann@acme.test']);
    expect(mail!.headers.to!.toLowerCase()).toContain('ann@acme.test');
    expect(mail!.headers.from).toContain('no-reply@tenantry.test');
    expect(mail!.headers.subject).toContain('Customer acme');
    const link = linkIn(mail!);
    expect(link.protocol).toBe('https:');
    expect(link.host).toBe('app.acme.example');
    expect(link.pathname).toBe('/auth/reset');
    const token = link.searchParams.get('token')!;
    expect(token.length).toBeGreaterThanOrEqual(32);

    // Neither the token nor the link travelled in any event or audit row.
    const { rows } = await app.services.db.pool.query(
      `select payload::text as p from outbox union all select payload::text from audit_events`,
    );
    expect(rows.some((r: { p: string }) => r.p.includes(token) || r.p.includes('/auth/reset'))).toBe(false);

    await eventually(async () => (await tokensOf(acme, invited.body.id)).length === 1, 5000, 'the token to commit');
    const first = await app
      .http('app.acme.example')
      .post('/api/v1/auth/password/reset')
      .send({ token, password: 'ann password' });
    expect(first.status).toBe(204);
    expect(await storedUser(app, acme, invited.body.id)).toMatchObject({ status: 'active' });
    const second = await app
      .http('app.acme.example')
      .post('/api/v1/auth/password/reset')
      .send({ token, password: 'other password' });
    expect(second.status).toBe(401);
    expect(
      (
        await app
          .http('acme.localhost')
          .post('/api/v1/auth/login')
          .send({ email: 'ann@acme.test', password: 'ann password' })
      ).status,
    ).toBe(200);
  });

  it('is sent for the tenant invite of the control plane, on that tenant’s primary host', async () => {
    const globex = await createCustomer(app, 'globex', 'globex.localhost');
    const res = await app
      .http()
      .post(`/api/v1/tenant/tenants/${globex.id}/invite`)
      .set('Cookie', operatorCookie)
      .send({ email: 'boss@globex.test' });
    expect(res.status).toBe(201);
    const [mail] = await eventually(
      async () => sink.to('boss@globex.test').length > 0 && sink.to('boss@globex.test'),
      15_000,
      'the tenant invite mail',
    );
    const link = linkIn(mail!);
    // A local host gets a plain-http link.
    expect(link.protocol).toBe('http:');
    expect(link.hostname).toBe('globex.localhost');
    // The mail goes out inside the subscription's transaction; the token is there once it commits.
    await eventually(async () => (await tokensOf(globex, res.body.id)).length === 1, 5000, 'the token to commit');
  });

  it('skips somebody who already has a password: no token, no mail', async () => {
    const userId = await app.services.transactions.run(acme, async (ctx) => {
      const { rows } = await ctx.db.executeQuery<{ id: string }>(
        CompiledQuery.raw(
          `insert into users (email, status, password_hash) values ('has@acme.test', 'invited', '$argon2id$v=19$m=19456,t=2,p=1$x$y') returning id`,
          [],
        ),
      );
      ctx.publish('user.invited', { id: rows[0]!.id });
      return rows[0]!.id;
    });
    await eventually(
      async () =>
        (
          await app.services.db.pool.query(
            `select 1 from processed_events p join outbox o on o.event_id = p.event_id where p.subscription = 'user-invitation-mail' and o.payload->>'id' = $1`,
            [userId],
          )
        ).rows.length > 0,
      15_000,
      'the subscription to handle the event',
    );
    expect(await tokensOf(acme, userId)).toEqual([]);
    expect(sink.to('has@acme.test')).toEqual([]);
  });
});

describe('a failing mail server', () => {
  let quiet: TestApp;
  let tenant: TenantRef;
  beforeAll(async () => {
    quiet = await startTestApp({
      role: 'all',
      startWorker: false,
      config: testConfig({ mail: { host: '127.0.0.1', port: sink.port } }),
    });
    tenant = await createCustomer(quiet, 'bounce');
  });
  afterAll(async () => {
    await quiet?.close();
  });

  it('fails the delivery, keeps no token and records nothing, so the event is retried', async () => {
    sink.reject = (address) => address.startsWith('refuse@');
    const user = await quiet.services.transactions.run(tenant, (ctx) =>
      inviteUser(ctx, { email: 'refuse@bounce.test' }),
    );
    const { rows } = await quiet.services.db.pool.query(
      `select event_id, occurred_at from outbox where name = 'user.invited' and payload->>'id' = $1`,
      [user.id],
    );
    const event = {
      id: rows[0].event_id,
      name: 'user.invited',
      tenantId: tenant.id,
      actorId: null,
      occurredAt: rows[0].occurred_at.toISOString(),
      payload: { id: user.id },
    };

    await expect(quiet.worker!.deliver(invitationMail, event)).rejects.toThrow();
    expect(sink.refused).toContain('refuse@bounce.test');
    const tokens = await quiet.services.transactions.run(
      tenant,
      async (ctx) =>
        (
          await ctx.db.executeQuery(
            CompiledQuery.raw('select 1 from set_password_tokens where user_id = $1', [user.id]),
          )
        ).rows,
    );
    expect(tokens).toEqual([]);
    expect(
      (await quiet.services.db.pool.query('select 1 from processed_events where event_id = $1', [event.id])).rows,
    ).toEqual([]);

    // The retry, once the server accepts, delivers.
    sink.reject = () => false;
    await quiet.worker!.deliver(invitationMail, event);
    expect(sink.to('refuse@bounce.test')).toHaveLength(1);
  });
});

describe('the mailer', () => {
  it('is SMTP when mail.host is set and an in-memory mailbox otherwise', () => {
    expect(createMailer(testConfig({ mail: { host: 'smtp.example.test' } }).mail)).toBeInstanceOf(SmtpMailer);
    const memory = createMailer(testConfig().mail);
    expect(memory).toBeInstanceOf(MemoryMailbox);
    expect(memory.mode).toBe('memory');
  });
});
