import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createCustomer, type TestApp } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { addTenantHost, insertTenant, lockTenant, suspendTenant } from '../../framework/tenancy/control-plane.ts';

const t = useTestApp({ customers: ['acme', 'globex'] });

const insufficientPrivilege = { code: '42501' };

describe('global tables are not writable by the t.app role', () => {
  it('a customer tenant transaction cannot update, insert or delete tenant_hosts (42501)', async () => {
    await expect(
      t.app.services.transactions.run(t.acme, (ctx) =>
        sql`update tenant_hosts set tenant_id = ${t.acme.id} where tenant_id = ${t.globex.id}`.execute(ctx.db),
      ),
    ).rejects.toMatchObject(insufficientPrivilege);
    await expect(
      t.app.services.transactions.run(t.acme, (ctx) =>
        sql`insert into tenant_hosts (host, tenant_id) values ('stolen.localhost', ${t.acme.id})`.execute(ctx.db),
      ),
    ).rejects.toMatchObject(insufficientPrivilege);
    await expect(
      t.app.services.transactions.run(t.acme, (ctx) =>
        sql`delete from tenant_hosts where tenant_id = ${t.globex.id}`.execute(ctx.db),
      ),
    ).rejects.toMatchObject(insufficientPrivilege);
    const { rows } = await t.app.services.db.pool.query('select host from tenant_hosts where tenant_id = $1', [
      t.globex.id,
    ]);
    expect(rows).toEqual([{ host: 'globex.localhost' }]);
  });

  it('a customer tenant transaction cannot write tenants (42501), not even the operator tenant’s', async () => {
    for (const tenant of [t.acme, t.app.operator]) {
      await expect(
        t.app.services.transactions.run(tenant, (ctx) =>
          sql`update tenants set status = 'suspended' where id = ${t.globex.id}`.execute(ctx.db),
        ),
      ).rejects.toMatchObject(insufficientPrivilege);
      await expect(
        t.app.services.transactions.run(tenant, (ctx) =>
          sql`insert into tenants (slug, name) values ('sneaky', 'Sneaky')`.execute(ctx.db),
        ),
      ).rejects.toMatchObject(insufficientPrivilege);
    }
  });

  it('the t.app role still reads them (host resolution and the tenant list need it)', async () => {
    const hosts = await t.app.services.transactions.run(t.acme, (ctx) =>
      sql<{ host: string }>`select host from tenant_hosts where tenant_id = ${t.acme.id}`.execute(ctx.db),
    );
    expect(hosts.rows).toEqual([{ host: 'acme.localhost' }]);
  });
});

describe('the control-plane functions check the operator tenant', () => {
  it('refuse a customer tenant’s transaction (42501) and change nothing', async () => {
    const attempts: [
      string,
      (ctx: Parameters<Parameters<TestApp['services']['transactions']['run']>[1]>[0]) => Promise<unknown>,
    ][] = [
      ['add a host', (ctx) => addTenantHost(ctx, t.acme.id, 'www.globex.localhost', true)],
      ['suspend', (ctx) => suspendTenant(ctx, t.globex.id)],
      ['lock', (ctx) => lockTenant(ctx, t.globex.id)],
      [
        'create',
        (ctx) =>
          insertTenant(ctx, {
            id: randomUUID(),
            slug: 'rogue',
            name: 'Rogue',
            host: 'rogue.localhost',
            isOperator: false,
          }),
      ],
      [
        'create an operator',
        (ctx) =>
          insertTenant(ctx, {
            id: randomUUID(),
            slug: 'rogue-op',
            name: 'Rogue',
            host: 'rogue-op.localhost',
            isOperator: true,
          }),
      ],
    ];
    for (const [what, attempt] of attempts) {
      await expect(t.app.services.transactions.run(t.acme, attempt), what).rejects.toMatchObject(insufficientPrivilege);
    }
    const { rows } = await t.app.services.db.pool.query(
      `select (select count(*)::int from tenants where slug like 'rogue%') as rogues,
              (select status from tenants where id = $1) as status,
              (select count(*)::int from tenant_hosts where host = 'www.globex.localhost') as hosts`,
      [t.globex.id],
    );
    expect(rows[0]).toEqual({ rogues: 0, status: 'active', hosts: 0 });
  });

  it('serve the operator tenant’s transaction', async () => {
    const beta = await createCustomer(t.app, 'beta');
    await t.app.services.transactions.run(t.app.operator, async (ctx) => {
      await lockTenant(ctx, beta.id);
      await addTenantHost(ctx, beta.id, 'www.beta.localhost', true);
      expect(await suspendTenant(ctx, beta.id)).toBe(true);
      expect(await suspendTenant(ctx, beta.id)).toBe(false);
    });
    const { rows } = await t.app.services.db.pool.query(
      `select t.status, h.host, h.is_primary from tenants t join tenant_hosts h on h.tenant_id = t.id where t.id = $1 order by h.host`,
      [beta.id],
    );
    expect(rows).toEqual([
      { status: 'suspended', host: 'beta.localhost', is_primary: false },
      { status: 'suspended', host: 'www.beta.localhost', is_primary: true },
    ]);
  });

  it('never suspend the operator tenant', async () => {
    expect(await t.app.services.transactions.run(t.app.operator, (ctx) => suspendTenant(ctx, t.app.operator.id))).toBe(
      false,
    );
  });
});
