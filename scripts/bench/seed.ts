import { CompiledQuery } from 'kysely';
import type { Services } from '../../framework/services.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { createTenant } from '../../framework/tenancy/create-tenant.ts';
import { hashPassword } from '../../modules/auth/passwords.ts';
import { weakETag } from '../../framework/http/etag.ts';

export const BASELINE_TABLE = 'bench_baseline_widgets';
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
  /** Accounts in the first tenant for wrong-password attempts, spread to stay under the failed-login limit. */
  wrongPasswordEmails: string[];
  /** A published content page of the first tenant: its public path and current ETag (for the 304 scenario). */
  page: { path: string; etag: string };
}

/** The public page the 304 scenario asks for, and its Markdown (rendered only on a 200). */
export const BENCH_PAGE_SLUG = 'bench-page';
const BENCH_PAGE_BODY = '# A benchmark page\n\nSome *Markdown* with [a link](https://example.test/) and a list:\n\n- one\n- two\n';

/**
 * The seeded widget rows: one generator for the service's table and for the baseline's copy, so
 * both list the same data. created_at is spread one second apart so the default sort is total.
 */
export function widgetRowsSql(table: string, tenantColumn: boolean): string {
  return `insert into ${table} (${tenantColumn ? 'tenant_id, ' : ''}name, size, note, color, created_at, updated_at)
    select ${tenantColumn ? '$2::uuid, ' : ''}'seed-' || lpad(i::text, 6, '0'), i % 1000,
           case when i % 3 = 0 then 'a note on widget ' || i end,
           (array['red', 'green', 'blue', 'amber'])[1 + i % 4],
           now() - make_interval(secs => $1 - i), now() - make_interval(secs => $1 - i)
      from generate_series(1, $1::int) as i`;
}

/**
 * Two tenants made as the tenant module makes them, each with rowsPerTenant widgets; in the first,
 * a user holding a role with the widget permissions and the accounts the login timing uses.
 */
export async function seed(services: Services, options: { runId: string; rowsPerTenant: number; wrongPasswordAccounts: number }): Promise<SeedInfo> {
  const { rows } = await services.db.pool.query<{ id: string; slug: string }>('select id, slug from tenants where is_operator');
  const operator: TenantRef = { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true };
  const tenants: SeededTenant[] = [];
  for (const letter of ['a', 'b']) {
    const slug = `bench-${letter}-${options.runId}`;
    const host = `${slug}.localhost`;
    const tenant = await services.transactions.run(operator, (ctx) => createTenant(ctx, services, { slug, name: `Bench ${letter}`, host }));
    await services.transactions.run(tenant, (ctx) => ctx.db.executeQuery(CompiledQuery.raw(widgetRowsSql('widgets', false), [options.rowsPerTenant])));
    tenants.push({ id: tenant.id, slug, host });
  }

  const hash = await hashPassword(BENCH_PASSWORD);
  const email = `bench-${options.runId}@example.test`;
  const wrongPasswordEmails = Array.from({ length: options.wrongPasswordAccounts }, (_, i) => `wrong-${i}-${options.runId}@example.test`);
  const first: TenantRef = { id: tenants[0]!.id, slug: tenants[0]!.slug, isOperator: false };
  const pageUpdatedAt = await services.transactions.run(first, async (ctx) => {
    const raw = <R>(text: string, params: unknown[]) => ctx.db.executeQuery<R>(CompiledQuery.raw(text, params));
    await raw('insert into roles (name, permissions) values ($1, $2)', [BENCH_ROLE, ['widget:read', 'widget:write', 'file:read', 'file:manage']]);
    const user = await raw<{ id: string }>(`insert into users (email, display_name, status, roles, password_hash) values ($1, 'Bench', 'active', $2, $3) returning id`, [email, [BENCH_ROLE], hash]);
    for (const address of wrongPasswordEmails) {
      await raw(`insert into users (email, display_name, status, roles, password_hash) values ($1, 'Bench', 'active', '{}', $2)`, [address, hash]);
    }
    const page = await raw<{ updated_at: Date }>(
      `insert into contents (slug, title, kind, body, status, published_at, author) values ($1, 'Benchmark page', 'page', $2, 'published', now(), $3) returning updated_at`,
      [BENCH_PAGE_SLUG, BENCH_PAGE_BODY, user.rows[0]!.id],
    );
    return page.rows[0]!.updated_at;
  });
  // Fresh statistics and visibility map, as a table that has lived a while would have.
  await services.db.pool.query('vacuum analyze widgets');
  await services.db.pool.query('vacuum analyze users');
  await services.db.pool.query('vacuum analyze contents');
  return { tenants, email, wrongPasswordEmails, page: { path: `/api/v1/content/public/${BENCH_PAGE_SLUG}`, etag: weakETag(pageUpdatedAt) } };
}
