import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { createCustomer, signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { sourceFiles } from '../helpers/import-graph.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { allModules } from '../../modules/index.ts';
import { defineModule, defineRoute, type Access } from '../../framework/entity/define.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import { RouteGuard } from '../../framework/access/guard.ts';
import { allows } from '../../framework/admin/allows.ts';
import type { SessionInfo } from '../../framework/context/tx.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * Authorization has one entry point: a route's guard (framework/access/guard.ts, RouteGuard),
 * made from its access when it is registered. The wrapper's early refusals, the three request
 * strategies, the one-exchange SQL guard's permission, the admin shell's links and the catalog all
 * ask it; nothing else in the framework reads which permissions are the operator's, whether a
 * session holds one, or refuses a caller itself.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const GUARD = 'framework/access/guard.ts';

describe('one entry point', () => {
  const files = sourceFiles(ROOT, 'framework').filter((file) => file !== GUARD);
  const uses = (pattern: RegExp, except: (file: string, line: string) => boolean = () => false) =>
    files.flatMap((file) =>
      readFileSync(resolve(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (pattern.test(line) && !except(file, line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );

  it('no framework file but the guard asks which permissions are the operator tenant’s', () => {
    expect(
      uses(
        /isOperatorPermission\(/,
        // Its declaration (the contract) and its definition (the registry), not a question asked.
        (file, line) =>
          ['framework/entity/registry.ts', 'framework/contracts/services.ts'].includes(file) &&
          /\(name: string\)/.test(line),
      ),
    ).toEqual([]);
  });

  it('no framework file but the guard asks whether a session holds a permission', () => {
    // The transaction context's own `can` is the same question, asked by module code of its data.
    expect(uses(/hasPermission\(/, (file) => file === 'framework/context/tx.ts')).toEqual([]);
  });

  it('no framework file but the guard refuses a caller for want of a session, a permission or the operator tenant', () => {
    expect(uses(/problem\('(AUTH_REQUIRED|AUTH_FORBIDDEN|AUTH_NOT_OPERATOR)'/)).toEqual([]);
  });
});

const probe = (name: string, access: Access) =>
  defineRoute({
    method: 'GET',
    url: `/api/v1/entryprobe/${name}`,
    operationId: `entryprobe-${name}`,
    summary: `Entry point probe: ${name}`,
    access,
    schema: { response: { 200: Type.Object({ ok: Type.Boolean() }) } },
    handler: async () => ({ ok: true }),
  });

const ACCESS: Record<string, Access> = {
  public: 'public',
  optional: 'optional',
  'signed-in': 'signedIn',
  read: { permission: 'widget:read' },
  operate: { permission: 'widget:operate' },
};
const entryProbe = defineModule({
  name: 'entryprobe',
  routes: Object.entries(ACCESS).map(([name, access]) => probe(name, access)),
});

describe('the yes or no the admin shell and the catalog ask', () => {
  const t = useTestApp({ modules: [...allModules, testkitModule, entryProbe] });

  it('is what the route answers, for every access, tenant and caller', async () => {
    const customer = await createCustomer(t.app, 'entry', 'entry.localhost');
    const tenants: [TenantRef, string][] = [
      [customer, 'entry.localhost'],
      [t.app.operator, 'operator.localhost'],
    ];
    let checked = 0;
    for (const [tenant, host] of tenants) {
      const callers: (SignedIn | undefined)[] = [undefined];
      for (const permissions of [[], ['widget:read'], ['widget:operate'], ['*']])
        callers.push(await signInAs(t.app, tenant, permissions));
      for (const caller of callers) {
        // The session as the opening statement resolves it for the caller's cookie.
        const session: SessionInfo | null = caller
          ? await t.app.services.transactions.run(tenant, async (tx) => tx.session, {
              sessionHash: hashSecret(caller.rawSessionId),
            })
          : null;
        for (const [name, access] of Object.entries(ACCESS)) {
          const request = t.app.http(host).get(`/api/v1/entryprobe/${name}`);
          const res = caller ? await request.set('Cookie', caller.cookie) : await request;
          const label = `${name} at ${host}, ${session ? [...session.permissions].join(',') || 'no permission' : 'nobody'}`;
          expect([200, 401, 403], label).toContain(res.status);
          const guard = new RouteGuard(access, t.app.services.registry);
          expect(guard.allows(session, tenant), label).toBe(res.status === 200);
          expect(allows(access, session, tenant, t.app.services.registry), label).toBe(res.status === 200);
          checked++;
        }
      }
    }
    expect(checked).toBe(2 * 5 * 5);
  });
});
