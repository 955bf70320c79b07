import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import { SmtpSink, linkIn } from '../modules/user/smtp-sink.ts';
import { eventually, outboxEvents } from '../modules/user/support.ts';
import { adminInvite, printedLink } from './processes.ts';
import { freePort } from '../helpers/ports.ts';

let app: TestApp;
let settings: Record<string, string>;
beforeAll(async () => {
  // The service's worker runs against the same database the command writes to.
  app = await startTestApp({ role: 'all', startWorker: true });
  settings = {
    TENANTRY_DATABASE_URL: app.databaseUrl,
    TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    TENANTRY_SERVER_PORT: '3000',
  };
});
afterAll(async () => {
  await app?.close();
});

const operatorUser = async (email: string) =>
  app.services.transactions.run(app.operator, async (ctx) => {
    const { rows } = await ctx.db.executeQuery<{ id: string; status: string; roles: string[] }>(
      CompiledQuery.raw('select id, status, roles from users where lower(email) = lower($1)', [email]),
    );
    return rows[0];
  });

const reset = (token: string, password: string) =>
  app.http().post('/api/v1/auth/password/reset').send({ token, password });

// A test here runs up to two commands, each given 60 s (adminInvite): the test's own limit leaves
// room for both, so a loaded machine slows the commands without failing the test (the 30 s default
// timed out "run again for the same address" at load 15-21, its two commands still running).
describe('npm run admin:invite', { timeout: 150_000 }, () => {
  it('invites an operator administrator and prints a working set-password link on the operator host', async () => {
    const run = await adminInvite(['first@example.com'], settings);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Invited first@example.com as administrator of the operator tenant');
    const link = printedLink(run.stdout);
    expect(link.protocol).toBe('http:');
    expect(link.host).toBe('operator.localhost:3000');
    expect(link.pathname).toBe('/auth/reset');

    const user = (await operatorUser('first@example.com'))!;
    expect(user).toMatchObject({ status: 'invited', roles: ['admin'] });
    const invited = (await outboxEvents(app, 'user.invited')).filter((e) => e.payload.id === user.id);
    expect(invited).toEqual([
      expect.objectContaining({ tenantId: app.operator.id, payload: { id: user.id, via: 'admin-invite' } }),
    ]);

    // The worker handles that event without minting a second token, so the printed link still works.
    await eventually(
      async () =>
        (
          await app.services.db.pool.query(
            `select 1 from processed_events p join outbox o on o.event_id = p.event_id where p.subscription = 'user-invitation-mail' and o.payload->>'id' = $1`,
            [user.id],
          )
        ).rows.length > 0,
      15_000,
      'the invitation subscription',
    );
    const token = link.searchParams.get('token')!;
    expect((await reset(token, 'operator password')).status).toBe(204);
    expect((await reset(token, 'operator password')).status).toBe(401);
    const login = await app
      .http()
      .post('/api/v1/auth/login')
      .send({ email: 'first@example.com', password: 'operator password' });
    expect(login.status).toBe(200);
    expect(login.headers['set-cookie']).toBeDefined();
  });

  it('run again for the same address, gives a new link (the old one stops working) and keeps one user', async () => {
    const first = printedLink((await adminInvite(['again@example.com'], settings)).stdout);
    const second = await adminInvite(['AGAIN@example.com'], settings);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('already exists');
    const link = printedLink(second.stdout);
    expect((await reset(first.searchParams.get('token')!, 'again password')).status).toBe(401);
    expect((await reset(link.searchParams.get('token')!, 'again password')).status).toBe(204);
    const { rows } = await app.services.db.pool.query(
      `select count(*)::int as n from users where lower(email) = 'again@example.com'`,
    );
    expect(rows[0].n).toBe(1);
  });

  it('gives an existing operator user the admin role and says that it added it', async () => {
    await app.services.transactions.run(app.operator, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into users (email, status, roles) values ('member@example.com', 'active', '{member}')`,
          [],
        ),
      ),
    );
    const run = await adminInvite(['member@example.com'], settings);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(
      'member@example.com already exists in the operator tenant: added the admin role to it.',
    );
    expect((await operatorUser('member@example.com'))!.roles).toEqual(['admin', 'member']);
    // Run again, it says there was nothing to add.
    const again = await adminInvite(['member@example.com'], settings);
    expect(again.stdout).toContain('already holds the admin role');
    expect(again.stdout).not.toContain('added the admin role');
  });

  it('with --tenant, does the same for a customer tenant, on its host', async () => {
    const acme = await createCustomer(app, 'acme');
    const run = await adminInvite(['boss@acme.test', '--tenant', 'acme'], settings);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('Invited boss@acme.test as administrator of tenant acme');
    const link = printedLink(run.stdout);
    expect(link.host).toBe('acme.localhost:3000');
    const stored = await app.services.transactions.run(
      acme,
      async (ctx) =>
        (
          await ctx.db.executeQuery<{ roles: string[] }>(
            CompiledQuery.raw(`select roles from users where email = 'boss@acme.test'`, []),
          )
        ).rows,
    );
    expect(stored).toEqual([{ roles: ['admin'] }]);
    expect(
      (
        await app
          .http('acme.localhost')
          .post('/api/v1/auth/password/reset')
          .send({ token: link.searchParams.get('token'), password: 'boss password' })
      ).status,
    ).toBe(204);
    const unknown = await adminInvite(['boss@nowhere.test', '--tenant', 'nowhere'], settings);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('there is no tenant nowhere');
  });

  it('refuses a missing or malformed address with the usage line', async () => {
    const none = await adminInvite([], settings);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('usage: npm run admin:invite -- you@example.com');
    const bad = await adminInvite(['not-an-address'], settings);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('not an email address');
  });

  it('also mails the link when SMTP is configured', async () => {
    const sink = new SmtpSink();
    const port = await sink.start();
    try {
      const run = await adminInvite(['mailed@example.com'], {
        ...settings,
        TENANTRY_MAIL_HOST: '127.0.0.1',
        TENANTRY_MAIL_PORT: String(port),
      });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain('The link was also mailed to mailed@example.com');
      const [mail] = sink.to('mailed@example.com');
      expect(linkIn(mail!).href).toBe(printedLink(run.stdout).href);
    } finally {
      await sink.stop();
    }
  });
});

describe('npm run admin:invite without database.url', () => {
  it('uses the embedded PostgreSQL the running service holds on database.embedded_port', async () => {
    const adminUrl = new URL(inject('pgAdminUrl'));
    // Only the embedded server of the test run has the embedded server's credentials.
    if (adminUrl.username !== 'postgres' || adminUrl.hostname !== '127.0.0.1') return;
    const run = await adminInvite(['embedded@example.com'], {
      TENANTRY_DATABASE_EMBEDDED_PORT: adminUrl.port,
      TENANTRY_DATABASE_EMBEDDED_DIR: '/nonexistent/never-used',
      TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    });
    expect(run.code, run.stderr).toBe(0);
    const url = new URL(adminUrl);
    url.pathname = '/tenantry';
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      const { rows } = await client.query(
        `select u.roles from users u join tenants t on t.id = u.tenant_id where t.is_operator and u.email = 'embedded@example.com'`,
      );
      expect(rows).toEqual([{ roles: ['admin'] }]);
    } finally {
      await client.end();
    }
  });

  it('starts the embedded PostgreSQL itself when nothing runs there, and stops it afterwards', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenantry-admin-invite-'));
    chmodSync(dir, 0o755);
    const port = await freePort();
    try {
      const run = await adminInvite(
        ['fresh@example.com'],
        {
          TENANTRY_DATABASE_EMBEDDED_PORT: String(port),
          TENANTRY_DATABASE_EMBEDDED_DIR: join(dir, 'postgres'),
          TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
        },
        120_000,
      );
      expect(run.code, run.stderr).toBe(0);
      expect(printedLink(run.stdout).hostname).toBe('operator.localhost');
      // It stopped the server it started.
      const client = new pg.Client({
        connectionString: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
        connectionTimeoutMillis: 1000,
      });
      client.on('error', () => {});
      await expect(client.connect()).rejects.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});
