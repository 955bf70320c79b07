import { CompiledQuery } from 'kysely';
import type { Services } from '../../framework/services.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { createTenant } from '../../framework/tenancy/create-tenant.ts';
import { hashPassword } from '../../modules/user/passwords.ts';
import { weakETag } from '../../framework/http/etag.ts';

export const BASELINE_TABLE = 'bench_baseline_widgets';
export const BASELINE_NOTIFICATIONS = 'bench_baseline_notifications';
export const BENCH_ROLE = 'bench';
export const BENCH_PASSWORD = 'bench-password-1234';

export interface SeededTenant {
  id: string;
  slug: string;
  host: string;
}

export interface SeedInfo {
  tenants: SeededTenant[];
  /** Signs in with BENCH_PASSWORD and holds widget:read and widget:write in the first tenant. */
  email: string;
  /** That user's id: the recipient of the seeded notifications. */
  userId: string;
  /** Accounts in the first tenant for wrong-password attempts, spread to stay under the failed-login limit. */
  wrongPasswordEmails: string[];
  /** As many invited accounts (no password yet) and deactivated ones (BENCH_PASSWORD), for the other refusals. */
  invitedEmails: string[];
  deactivatedEmails: string[];
  /** A published content page of the first tenant: its public path and current ETag (for the 304 scenario). */
  page: { path: string; etag: string };
}

/** The public page the 304 scenario asks for, and its Markdown (rendered only on a 200). */
export const BENCH_PAGE_SLUG = 'bench-page';
const BENCH_PAGE_BODY =
  '# A benchmark page\n\nSome *Markdown* with [a link](https://example.test/) and a list:\n\n- one\n- two\n';

/**
 * The seeded widget rows number from..to: one generator for the service's table and for the
 * baseline's copy, so both list the same data. created_at is a fixed instant plus the row's number
 * in seconds: the default sort is total, the same in both tables, and rows added later to grow a
 * table sort after the first ones, so the first page stays the same page at every size. Ids
 * ascend with the row number (time-ordered, like the UUIDv7 the service generates), so a million
 * rows go into the primary key's index in order, not at random places: seeding stays fast (the
 * tenant's first eight digits keep two tenants' ids apart).
 * Parameters: $1 from, $2 to (and $3 the tenant, with tenantColumn).
 */
export function widgetRowsSql(table: string, tenantColumn: boolean): string {
  return `insert into ${table} (${tenantColumn ? 'tenant_id, ' : ''}id, name, size, note, color, created_at, updated_at)
    select ${tenantColumn ? '$3::uuid, ' : ''}(left(${tenantColumn ? '$3::text' : 'app_tenant_id()::text'}, 8) || '-0000-7000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, 'seed-' || lpad(i::text, 7, '0'), i % 1000,
           case when i % 3 = 0 then 'a note on widget ' || i end,
           (array['red', 'green', 'blue', 'amber'])[1 + i % 4],
           timestamptz '2020-01-01 00:00:00+00' + make_interval(secs => i), timestamptz '2020-01-01 00:00:00+00' + make_interval(secs => i)
      from generate_series($1::int, $2::int) as i`;
}

/** The bench user's notifications (and a few for somebody else, which the owner-scoped list must skip). */
const NOTIFICATIONS_SQL = `insert into notifications (recipient_id, title, body, link, created_at, read_at)
  select case when i % 10 = 0 then $2::uuid else $1::uuid end, 'Notice ' || i, 'Something happened to item ' || i, '/items/' || i,
         timestamptz '2020-01-01 00:00:00+00' + make_interval(secs => i),
         case when i % 2 = 0 then timestamptz '2020-01-01 00:00:00+00' + make_interval(secs => i + 60) end
    from generate_series(1, $3::int) as i`;

/**
 * Two tenants made as the tenant module makes them, each with rowsPerTenant widgets; in the first,
 * a user holding a role with the widget permissions and the accounts the login timing uses.
 */
export async function seed(
  services: Services,
  options: { runId: string; rowsPerTenant: number; wrongPasswordAccounts: number; notifications: number },
): Promise<SeedInfo> {
  const { rows } = await services.db.pool.query<{ id: string; slug: string }>(
    'select id, slug from tenants where is_operator',
  );
  const operator: TenantRef = { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true };
  const tenants: SeededTenant[] = [];
  for (const letter of ['a', 'b']) {
    const slug = `bench-${letter}-${options.runId}`;
    const host = `${slug}.localhost`;
    const tenant = await services.transactions.run(operator, (ctx) =>
      createTenant(ctx, services, { slug, name: `Bench ${letter}`, host }),
    );
    await services.transactions.run(tenant, (ctx) =>
      ctx.db.executeQuery(CompiledQuery.raw(widgetRowsSql('widgets', false), [1, options.rowsPerTenant])),
    );
    tenants.push({ id: tenant.id, slug, host });
  }

  const hash = await hashPassword(BENCH_PASSWORD);
  const email = `bench-${options.runId}@example.test`;
  const wrongPasswordEmails = Array.from(
    { length: options.wrongPasswordAccounts },
    (_, i) => `wrong-${i}-${options.runId}@example.test`,
  );
  const accounts = (kind: string) =>
    Array.from({ length: options.wrongPasswordAccounts }, (_, i) => `${kind}-${i}-${options.runId}@example.test`);
  const invitedEmails = accounts('invited');
  const deactivatedEmails = accounts('deactivated');
  const first: TenantRef = { id: tenants[0]!.id, slug: tenants[0]!.slug, isOperator: false };
  const { pageUpdatedAt, userId } = await services.transactions.run(first, async (ctx) => {
    const raw = <R>(text: string, params: unknown[]) => ctx.db.executeQuery<R>(CompiledQuery.raw(text, params));
    await raw('insert into roles (name, permissions) values ($1, $2)', [
      BENCH_ROLE,
      ['widget:read', 'widget:write', 'file:read', 'file:manage'],
    ]);
    const user = await raw<{ id: string }>(
      `insert into users (email, display_name, status, roles, password_hash) values ($1, 'Bench', 'active', $2, $3) returning id`,
      [email, [BENCH_ROLE], hash],
    );
    for (const address of wrongPasswordEmails) {
      await raw(
        `insert into users (email, display_name, status, roles, password_hash) values ($1, 'Bench', 'active', '{}', $2)`,
        [address, hash],
      );
    }
    for (const address of invitedEmails) {
      await raw(`insert into users (email, display_name, status, roles) values ($1, 'Bench', 'invited', '{}')`, [
        address,
      ]);
    }
    for (const address of deactivatedEmails) {
      await raw(
        `insert into users (email, display_name, status, roles, password_hash) values ($1, 'Bench', 'deactivated', '{}', $2)`,
        [address, hash],
      );
    }
    // One in ten for another recipient, interleaved in time, so the owner condition has rows to skip.
    const someoneElse = (
      await raw<{ id: string }>(
        `insert into users (email, display_name, status, roles) values ($1, 'Other', 'active', '{}') returning id`,
        [`other-${options.runId}@example.test`],
      )
    ).rows[0]!.id;
    await raw(NOTIFICATIONS_SQL, [user.rows[0]!.id, someoneElse, Math.ceil(options.notifications / 0.9)]);
    const page = await raw<{ updated_at: Date }>(
      `insert into contents (slug, title, kind, body, status, published_at, author) values ($1, 'Benchmark page', 'page', $2, 'published', now(), $3) returning updated_at`,
      [BENCH_PAGE_SLUG, BENCH_PAGE_BODY, user.rows[0]!.id],
    );
    return { pageUpdatedAt: page.rows[0]!.updated_at, userId: user.rows[0]!.id };
  });
  // Fresh statistics and visibility map, as a table that has lived a while would have.
  await services.db.pool.query('vacuum analyze widgets');
  await services.db.pool.query('vacuum analyze users');
  await services.db.pool.query('vacuum analyze contents');
  await services.db.pool.query('vacuum analyze notifications');
  return {
    tenants,
    email,
    userId,
    wrongPasswordEmails,
    invitedEmails,
    deactivatedEmails,
    page: { path: `/api/v1/content/public/${BENCH_PAGE_SLUG}`, etag: weakETag(pageUpdatedAt) },
  };
}
