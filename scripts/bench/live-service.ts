import { CompiledQuery } from 'kysely';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type pg from 'pg';
import type { App } from '../../framework/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { hashSecret, newSessionId, sessionCookie } from '../../framework/access/session-cookie.ts';
import { createTenant } from '../../framework/tenancy/create-tenant.ts';
import type { LiveStats, LiveTenant } from './protocol.ts';

/**
 * The service's side of the live scenario (scripts/bench/live.ts): sessions for the bench user, so
 * the run can open more streams than live.max_streams_per_caller allows one session, and a count of
 * what each live batch sends PostgreSQL, observed on the driver.
 */

/** `count` new sessions of the bench user in its tenant, as cookies (the user's own, as a sign-in makes them). */
export async function liveSessions(app: App, tenant: TenantRef, userId: string, count: number): Promise<string[]> {
  const { name } = sessionCookie(app.services.config);
  const raws = Array.from({ length: count }, () => newSessionId());
  await app.services.transactions.run(tenant, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw(
        `insert into sessions (id_hash, user_id, expires_at)
         select h, $2, now() + interval '1 day' from unnest($1::bytea[]) as h`,
        [raws.map(hashSecret), userId],
      ),
    ),
  );
  return raws.map((raw) => `${name}=${raw}`);
}

/**
 * `count` tenants more, made as the tenant module makes them, each with a user holding the widget
 * permissions and `sessions` sessions of that user (as cookies): the live scenario's streams
 * spread over many tenants, and the creates committed in them.
 */
export async function liveTenants(app: App, runId: string, count: number, sessions: number): Promise<LiveTenant[]> {
  const { rows } = await app.services.db.pool.query<{ id: string; slug: string }>(
    'select id, slug from tenants where is_operator',
  );
  const operator: TenantRef = { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true };
  const made: LiveTenant[] = [];
  for (let i = 0; i < count; i++) {
    const slug = `live-${runId}-${i}`;
    const host = `${slug}.localhost`;
    const tenant = await app.services.transactions.run(operator, (ctx) =>
      createTenant(ctx, app.services, { slug, name: `Live ${i}`, host }),
    );
    const userId = await app.services.transactions.run(tenant, async (ctx) => {
      await ctx.db.executeQuery(
        CompiledQuery.raw('insert into roles (name, permissions) values ($1, $2)', [
          'live-bench',
          ['widget:read', 'widget:write'],
        ]),
      );
      const user = await ctx.db.executeQuery<{ id: string }>(
        CompiledQuery.raw(
          `insert into users (email, display_name, status, roles) values ($1, 'Live', 'active', $2) returning id`,
          [`live-${i}-${runId}@example.test`, ['live-bench']],
        ),
      );
      return user.rows[0]!.id;
    });
    made.push({ host, cookies: await liveSessions(app, tenant, userId, sessions) });
  }
  return made;
}

/**
 * Counts, from now on, the statements sent on every pool checkout that ran a live batch (the batch
 * statement is known by its `changes` CTE): BEGIN, the tenant's opening, the batch, COMMIT, as the
 * driver sees them, and the tenant batches (batch statements) among them: a checkout that carried
 * several tenants' batches (the hub runs one a checkout today) would count one batch per tenant,
 * its BEGIN and COMMIT shared between them. A checkout that ran none is not counted.
 */
export function countLiveBatches(pool: pg.Pool): LiveStats {
  const stats: LiveStats = { batches: 0, statements: 0 };
  // How long the process's event loop was held (a list request waits behind what holds it), since
  // the last ask: read by the spread of the stats into the answer, and started anew.
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  let utilization = performance.eventLoopUtilization();
  Object.defineProperty(stats, 'loop', {
    enumerable: true,
    get: () => {
      const used = performance.eventLoopUtilization(utilization);
      utilization = performance.eventLoopUtilization();
      const loop = {
        delayP50Ms: delay.percentile(50) / 1e6,
        delayP99Ms: delay.percentile(99) / 1e6,
        delayMaxMs: delay.max / 1e6,
        utilization: used.utilization,
      };
      delay.reset();
      return loop;
    },
  });
  const current = new WeakMap<pg.PoolClient, { count: number; batches: number }>();
  const wrapped = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    current.set(client, { count: 0, batches: 0 });
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const checkout = current.get(client);
      if (checkout) {
        const config = args[0] as string | { text: string };
        checkout.count++;
        if ((typeof config === 'string' ? config : config.text).includes('changes as materialized')) checkout.batches++;
      }
      return query(...args);
    };
  });
  pool.on('release', (_err: Error | undefined, client: pg.PoolClient) => {
    const checkout = current.get(client);
    current.delete(client);
    if (!checkout?.batches) return;
    stats.batches += checkout.batches;
    stats.statements += checkout.count;
  });
  return stats;
}
