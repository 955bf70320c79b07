import { randomUUID } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import type { TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { deliveredEvent, type OutboxRow } from '../../../framework/events/relay.ts';
import { hashPassword } from '../../../modules/user/passwords.ts';

export interface UserSpec {
  email?: string;
  password?: string | null;
  status?: 'invited' | 'active' | 'deactivated';
  roles?: string[];
  displayName?: string;
}

/** Inserts a user straight into the tenant's table, with an argon2id hash of the given password. */
export async function addUser(
  app: TestApp,
  tenant: TenantRef,
  spec: UserSpec = {},
): Promise<{ id: string; email: string; password: string }> {
  const email = spec.email ?? `${randomUUID().slice(0, 8)}@example.test`;
  const password = spec.password === undefined ? 'correct horse battery' : spec.password;
  const hash = password === null ? null : await hashPassword(password);
  const id = await app.services.transactions.run(tenant, async (ctx) => {
    const { rows } = await ctx.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(
        `insert into users (email, display_name, status, roles, password_hash) values ($1, $2, $3, $4, $5) returning id`,
        [email, spec.displayName ?? 'Pat Example', spec.status ?? 'active', spec.roles ?? [], hash],
      ),
    );
    return rows[0]!.id;
  });
  return { id, email, password: password ?? '' };
}

/** The `name=value` pair of the session cookie a response set, for a later Cookie header. */
export function sessionCookieOf(res: { headers: Record<string, unknown> }): string | undefined {
  const header = res.headers['set-cookie'];
  const list = Array.isArray(header) ? (header as string[]) : typeof header === 'string' ? [header] : [];
  const line = list.find((c) => /^(__Host-)?app_session=[^;]/.test(c));
  return line?.split(';', 1)[0];
}

export type { OutboxRow as OutboxEvent } from '../../helpers/outbox.ts';
export { outboxRows as outbox } from '../../helpers/outbox.ts';

/**
 * Delivers every unrelayed outbox row now through the worker's own delivery code (the audit
 * recorder and each subscription of the event), without the queue in between.
 */
export async function deliverOutbox(app: TestApp): Promise<number> {
  const worker = app.worker;
  if (!worker) throw new Error('deliverOutbox needs an app built with role all or worker');
  const { rows } = await app.services.db.pool.query<OutboxRow>(
    'select id, event_id, tenant_id, name, payload, actor_id, occurred_at from outbox where relayed_at is null order by id',
  );
  for (const row of rows) {
    const event = deliveredEvent(row);
    await worker.recordAudit(event);
    for (const sub of app.services.registry.subscriptions.filter((s) => s.event === row.name))
      await worker.deliver(sub, event);
    await app.services.db.pool.query('update outbox set relayed_at = now() where id = $1', [row.id]);
  }
  return rows.length;
}

/** Forgets every counted sign-in attempt, so a test starts with empty windows. */
export async function clearAttempts(app: TestApp): Promise<void> {
  await app.services.db.pool.query('delete from auth_attempts');
}

/** Polls until check returns a value other than undefined/false, or fails after the timeout. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
