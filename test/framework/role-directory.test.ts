import { describe, expect, it } from 'vitest';
import { useTestApp } from '../helpers/use-test-app.ts';
import { roleDirectory } from '../../framework/access/roles.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { TxContext } from '../../framework/context/tx.ts';

/**
 * Rule: the framework's role reads (framework/access/roles.ts) answer which roles of the
 * caller's tenant exist and which grant every permission, from the roles table as it stands in
 * the caller's transaction (its own uncommitted writes included), and never see another tenant's.
 */
const t = useTestApp({ customers: ['acme', 'globex'] });

const inTenant = <T>(tenant: TenantRef, fn: (ctx: TxContext) => Promise<T>): Promise<T> =>
  t.app.services.transactions.run(tenant, fn);

describe('roleDirectory', () => {
  it('names the roles the tenant lacks, in the order asked, and sees the seeded admin and member', async () => {
    await inTenant(t.acme, async (ctx) => {
      await ctx.db
        .insertInto('roles')
        .values({ name: 'editor', permissions: ['user:read'] })
        .execute();
      expect(await roleDirectory.unknown(ctx, ['ghost', 'admin', 'editor', 'member', 'phantom'])).toEqual([
        'ghost',
        'phantom',
      ]);
      expect(await roleDirectory.unknown(ctx, [])).toEqual([]);
    });
  });

  it('tells which roles grant every permission, leaving out the one a change is about', async () => {
    await inTenant(t.acme, async (ctx) => {
      await ctx.db
        .insertInto('roles')
        .values({ name: 'owner', permissions: ['*', 'user:read'] })
        .execute();
      expect(await roleDirectory.grantingEverything(ctx)).toEqual(['admin', 'owner']);
      expect(await roleDirectory.grantingEverything(ctx, { except: 'admin' })).toEqual(['owner']);
      expect(await roleDirectory.grantEverything(ctx, ['member', 'owner'])).toBe(true);
      expect(await roleDirectory.grantEverything(ctx, ['member', 'ghost'])).toBe(false);
      expect(await roleDirectory.grantEverything(ctx, [])).toBe(false);
    });
  });

  it('never sees another tenant’s roles', async () => {
    await inTenant(t.globex, (ctx) =>
      ctx.db
        .insertInto('roles')
        .values({ name: 'globex-only', permissions: ['*'] })
        .execute(),
    );
    await inTenant(t.acme, async (ctx) => {
      expect(await roleDirectory.unknown(ctx, ['globex-only'])).toEqual(['globex-only']);
      expect(await roleDirectory.grantEverything(ctx, ['globex-only'])).toBe(false);
      expect(await roleDirectory.grantingEverything(ctx)).not.toContain('globex-only');
    });
  });
});
