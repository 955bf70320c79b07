import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server, type Socket } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { startService, stopService } from '../e2e/processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { startTestApp, createCustomer, signInAs, type SignedIn, type TestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { subscriptionQueue } from '../../framework/events/relay.ts';
import { notificationMail } from '../../modules/notification/notification-mail.ts';
import { notify } from '../../modules/notification/notify.ts';
import { SmtpSink } from '../modules/user/smtp-sink.ts';
import { eventually } from '../modules/user/support.ts';

/**
 * Fault: a worker killed with SIGKILL while delivering (issue 31, point 1). A worker process
 * delivers notification mails to a mail server that accepts the connection and then says nothing,
 * so its deliveries hang, active in pg-boss, when it is killed. A new worker (with a mail server
 * that answers) retries them once their expiry (worker.delivery_expire_seconds, 3 s here) has
 * passed: every mail arrives, once; every event has one audit row and one processed record.
 */

const EXPIRE_SECONDS = 3;
const MAILS = 3;

let databaseUrl: string;
let other: TestApp;
let acme: TenantRef;
const recipients: SignedIn[] = [];
const sink = new SmtpSink();
let silent: Server;
const held: Socket[] = [];
let silentPort: number;
let first: { child: ChildProcess; log: () => string } | undefined;
let second: { child: ChildProcess; log: () => string } | undefined;

beforeAll(async () => {
  databaseUrl = await createTestDatabase('killed');
  other = await startTestApp({ databaseUrl, modules: allModules });
  acme = await createCustomer(other, 'killed-acme');
  for (let i = 0; i < MAILS; i++) recipients.push(await signInAs(other, acme, [], { email: `r${i}@killed.test` }));
  // A mail server that takes the connection and never greets: a delivery to it stays in progress.
  silent = createServer((socket) => {
    held.push(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  silentPort = (silent.address() as { port: number }).port;
  await sink.start();
}, 60_000);

afterAll(async () => {
  for (const w of [first, second]) if (w) await stopService(w.child);
  for (const socket of held) socket.destroy();
  await new Promise((resolve) => silent?.close(resolve));
  await sink.stop();
  await other?.close();
}, 60_000);

const workerSettings = (mailPort: number) => ({
  TENANTRY_DATABASE_URL: databaseUrl,
  TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
  TENANTRY_SERVER_LOG_LEVEL: 'info',
  TENANTRY_MAIL_HOST: '127.0.0.1',
  TENANTRY_MAIL_PORT: String(mailPort),
  TENANTRY_WORKER_DELIVERY_EXPIRE_SECONDS: String(EXPIRE_SECONDS),
  TENANTRY_WORKER_SUPERVISE_INTERVAL_SECONDS: '1',
});

const one = async <T>(text: string, values: unknown[] = []) =>
  (await other.services.db.pool.query(text, values)).rows[0] as T;

describe('a worker killed with SIGKILL while delivering', () => {
  // The limit (240 s) is the sum of what the test waits for, each bounded on its own below: two
  // worker starts (60 s each at most), the held delivery (20 s), three mails (30 s each at most) and
  // 1.5 s for a second copy. At 60 s in all, two slow starts on a loaded machine were enough to fail it.
  it('its deliveries are retried after their expiry by the next worker: every mail arrives once, nothing doubled', async () => {
    first = await startService(workerSettings(silentPort), 60_000, 'worker');
    const ids: string[] = [];
    for (const r of recipients) {
      const { id } = await other.services.transactions.run(acme, (ctx) =>
        notify(ctx, { recipientId: r.userId, title: `For ${r.email}`, body: 'x', link: '/admin', email: true }),
      );
      ids.push(id);
    }
    const queue = subscriptionQueue(notificationMail.name);
    // The first worker holds deliveries in progress: active in pg-boss, their connections open on the silent server.
    await eventually(
      async () =>
        held.length > 0 &&
        (
          await one<{ n: number }>(`select count(*)::int as n from pgboss.job where name = $1 and state = 'active'`, [
            queue,
          ])
        ).n > 0,
      20_000,
      'an active delivery',
    );
    const active = (
      await other.services.db.pool.query<{ id: string }>(
        `select id::text as id from pgboss.job where name = $1 and state = 'active'`,
        [queue],
      )
    ).rows.map((r) => r.id);
    first.child.kill('SIGKILL');
    await new Promise((resolve) => first!.child.once('exit', resolve));
    first = undefined;

    second = await startService(workerSettings(sink.port), 60_000, 'worker');
    for (const r of recipients)
      await eventually(async () => sink.to(r.email).length > 0, 30_000, `the mail to ${r.email}`);
    // A moment more for any second copy to show.
    await new Promise((r) => setTimeout(r, 1500));
    for (const r of recipients) expect(sink.to(r.email), r.email).toHaveLength(1);

    // The jobs active at the kill were retried (a second attempt), not left active.
    const retried = await other.services.db.pool.query<{ state: string; retry_count: number }>(
      `select state, retry_count from pgboss.job where id = any($1::uuid[])`,
      [active],
    );
    for (const job of retried.rows) {
      expect(job.state).toBe('completed');
      expect(job.retry_count).toBeGreaterThanOrEqual(1);
    }
    // One audit row and one processed record per event: nothing lost, nothing doubled.
    const events = (
      await other.services.db.pool.query<{ event_id: string }>(
        `select event_id::text as event_id from outbox where name = 'notification.email_requested' and payload->>'id' = any($1)`,
        [ids],
      )
    ).rows.map((r) => r.event_id);
    expect(events).toHaveLength(MAILS);
    expect(
      (
        await one<{ n: number }>(`select count(*)::int as n from audit_events where event_id = any($1::uuid[])`, [
          events,
        ])
      ).n,
    ).toBe(MAILS);
    expect(
      (
        await one<{ n: number }>(
          `select count(*)::int as n from processed_events where subscription = $1 and event_id = any($2::uuid[])`,
          [notificationMail.name, events],
        )
      ).n,
    ).toBe(MAILS);
  }, 240_000);
});
