import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

// Issue 46, the tenant's activity: its audit trail (recorded by the relay once an event's
// transaction committed) read back over GET /api/v1/audit/activity with audit:read.
const t = useTestApp({ role: 'all', startWorker: true, customers: ['acme'] });
const ACTIVITY = '/api/v1/audit/activity';

interface Activity {
  id: string;
  at: string;
  event: string;
  actor: { kind: string; userId: string | null; name: string | null };
  entity: string | null;
  entityId: string | null;
  data: Record<string, unknown>;
}

/** The tenant's activity once it holds what `until` waits for (the relay records events after commit). */
async function activityUntil(cookie: string, until: (items: Activity[]) => boolean): Promise<Activity[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const res = await t.app.http('acme.localhost').get(`${ACTIVITY}?limit=100`).set('Cookie', cookie);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (until(res.body.items)) return res.body.items;
    if (Date.now() > deadline) throw new Error(`activity never held it: ${JSON.stringify(res.body.items)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('the tenant’s activity', () => {
  it('shows a tenant admin’s role change, and a suspend and resume by the operator, naming none of the operator’s people', async () => {
    const admin = await signInAs(t.app, t.acme, ['*']);
    const member = await signInAs(t.app, t.acme, ['task:read']);
    const acme = () => t.app.http('acme.localhost');
    const roles = await acme()
      .post(`/api/v1/user/users/${member.userId}/roles`)
      .set('Cookie', admin.cookie)
      .send({ roles: ['member'] });
    expect(roles.status, JSON.stringify(roles.body)).toBe(200);

    const operator = await signInAs(t.app, t.app.operator, ['tenant:manage']);
    for (const action of ['suspend', 'resume']) {
      const res = await t.app
        .http()
        .post(`/api/v1/tenant/tenants/${t.acme.id}/${action}`)
        .set('Cookie', operator.cookie);
      expect(res.status).toBe(200);
    }
    const invited = await t.app
      .http()
      .post(`/api/v1/tenant/tenants/${t.acme.id}/invite`)
      .set('Cookie', operator.cookie)
      .send({ email: 'second-admin@acme.test' });
    expect(invited.status).toBe(201);

    const items = await activityUntil(admin.cookie, (list) =>
      ['user.roles_set', 'tenant.suspended', 'tenant.resumed', 'user.invited'].every((name) =>
        list.some((a) => a.event === name),
      ),
    );
    const byEvent = (name: string) => items.find((a) => a.event === name)!;
    expect(byEvent('user.roles_set')).toMatchObject({
      actor: { kind: 'user', userId: admin.userId, name: null },
      entity: 'user.user',
      entityId: member.userId,
    });
    for (const name of ['tenant.suspended', 'tenant.resumed']) {
      expect(byEvent(name)).toMatchObject({
        actor: { kind: 'operator', userId: null, name: null },
        entity: null,
        entityId: t.acme.id,
      });
    }
    expect(byEvent('user.invited')).toMatchObject({
      actor: { kind: 'operator', userId: null },
      entity: 'user.user',
      entityId: invited.body.id,
    });
    // Newest first: the resumption after the suspension.
    const order = items.map((a) => a.event);
    expect(order.indexOf('tenant.resumed')).toBeLessThan(order.indexOf('tenant.suspended'));
    // The operator's people are never named to the customer, nor its request ids; no address travels.
    const shown = JSON.stringify(items);
    expect(shown).not.toContain(operator.userId);
    expect(shown).not.toContain('second-admin@acme.test');

    // The operator's own activity names its person.
    const own = await t.app.http().get(`${ACTIVITY}?limit=100`).set('Cookie', operator.cookie);
    expect(own.status).toBe(403);
    const operatorAdmin = await signInAs(t.app, t.app.operator, ['*']);
    const operatorItems = (await t.app.http().get(`${ACTIVITY}?limit=100`).set('Cookie', operatorAdmin.cookie)).body
      .items as Activity[];
    expect(operatorItems.find((a) => a.event === 'tenant.suspended')).toMatchObject({
      actor: { kind: 'user', userId: operator.userId },
    });
  });

  it('needs audit:read: a member without it gets 403, a role holding it reads', async () => {
    const member = await signInAs(t.app, t.acme, ['task:read']);
    const refused = await t.app.http('acme.localhost').get(ACTIVITY).set('Cookie', member.cookie);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('AUTH_FORBIDDEN');
    const auditor = await signInAs(t.app, t.acme, ['audit:read']);
    const res = await t.app.http('acme.localhost').get(`${ACTIVITY}?limit=2`).set('Cookie', auditor.cookie);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ limit: 2, offset: 0 });
  });
});
