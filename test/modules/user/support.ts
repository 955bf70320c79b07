import { randomUUID } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { hashSecret, newSessionId, sessionCookie } from '../../../framework/access/session-cookie.ts';
import type { TestApp } from '../../helpers/app.ts';
import { outboxRows } from '../../helpers/outbox.ts';

export interface OutboxEvent {
  name: string;
  tenantId: string;
  payload: Record<string, unknown>;
  actorId: string | null;
}

/** Events recorded in the outbox (committed ones only), oldest first, optionally of one name. */
export async function outboxEvents(app: TestApp, name?: string): Promise<OutboxEvent[]> {
  const rows = await outboxRows(app, ...(name ? [name] : []));
  return rows.map((r) => ({ name: r.name, tenantId: r.tenant_id, payload: r.payload, actorId: r.actor_id }));
}

/** An active user holding the named (existing) roles, with a session: the Cookie header to send. */
export async function signInWithRoles(
  app: TestApp,
  tenant: TenantRef,
  roles: string[],
  email = `${randomUUID().slice(0, 8)}@example.test`,
): Promise<{ userId: string; cookie: string; email: string }> {
  const rawSessionId = newSessionId();
  const userId = await app.services.transactions.run(tenant, async (ctx) => {
    const user = await ctx.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(
        `insert into users (email, display_name, status, roles) values ($1, 'Someone', 'active', $2) returning id`,
        [email, roles],
      ),
    );
    const id = user.rows[0]!.id;
    await ctx.db.executeQuery(
      CompiledQuery.raw(
        `insert into sessions (id_hash, user_id, expires_at) values ($1, $2, now() + interval '30 days')`,
        [hashSecret(rawSessionId), id],
      ),
    );
    return id;
  });
  return { userId, email, cookie: `${sessionCookie(app.config).name}=${rawSessionId}` };
}

/** Polls until check returns a value other than undefined/false, or fails after timeoutMs. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Reads one user row as the database holds it, hash included (tests only). */
export async function storedUser(app: TestApp, tenant: TenantRef, id: string) {
  return app.services.transactions.run(tenant, async (ctx) => {
    const { rows } = await ctx.db.executeQuery<{
      email: string;
      status: string;
      roles: string[];
      password_hash: string | null;
      updated_at: Date;
      deleted_at: Date | null;
    }>(
      CompiledQuery.raw('select email, status, roles, password_hash, updated_at, deleted_at from users where id = $1', [
        id,
      ]),
    );
    return rows[0];
  });
}
