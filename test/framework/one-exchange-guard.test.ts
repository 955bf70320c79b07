import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type SignedIn, type TestApp } from '../helpers/app.ts';
import { checkedSample } from '../helpers/samples/values.ts';
import { hashSecret } from '../../framework/access/session-cookie.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { AnyRoute, RouteDefinition } from '../../framework/entity/define.ts';
import type { ResolvedEntity } from '../../framework/entity/resolve.ts';
import { prepared } from '../../framework/db/statements.ts';

/**
 * Authorization before commit, by construction: a one-exchange request sends its statement
 * before the caller is known, and the framework's guard (sent between the opening statement and
 * it) leaves the transaction read-only for a caller without the route's permission. Whatever a
 * builder puts in its statement, such a caller commits nothing and publishes nothing.
 */
let app: TestApp;
let acme: TenantRef;
let nobody: SignedIn;

beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'guarded');
  nobody = await signInAs(app, acme, []);
});
afterAll(async () => {
  await app?.close();
});

const count = async (sql: string, values: unknown[] = []) =>
  (await app.services.db.pool.query<{ n: number }>(sql, values)).rows[0]!.n;
const outboxRows = () => count('select count(*)::int as n from outbox');

// A builder that forgot the permission: a plain insert, no predicate anywhere.
const UNGUARDED = prepared(
  `insert into widgets (name, size, color, tenant_id) values ($1, 1, 'red', app_tenant_id()) returning id`,
);

describe('the one-exchange guard', () => {
  it('leaves a caller without the permission nothing committed and nothing published, even for a statement without a predicate', async () => {
    const before = await outboxRows();
    const name = `unguarded-${randomUUID()}`;
    const { session, answer } = await app.services.transactions.runStatement(
      acme,
      {
        statement: { text: UNGUARDED, values: [name] },
        permission: 'widget:write',
        events: [{ name: 'testkit.widget.created', payload: { id: randomUUID() } }],
      },
      { sessionHash: hashSecret(nobody.rawSessionId) },
    );
    expect(session?.userId).toBe(nobody.userId);
    expect(answer).toMatchObject({ ok: false, error: { code: '25006' } });
    expect(await count('select count(*)::int as n from widgets where name = $1', [name])).toBe(0);
    expect(await outboxRows()).toBe(before);
  });

  it('does the same for a caller with no session at all', async () => {
    const before = await outboxRows();
    const name = `anonymous-${randomUUID()}`;
    const { session, answer } = await app.services.transactions.runStatement(acme, {
      statement: { text: UNGUARDED, values: [name] },
      permission: 'widget:write',
      events: [{ name: 'testkit.widget.created', payload: { id: randomUUID() } }],
    });
    expect(session).toBeNull();
    expect(answer.ok).toBe(false);
    expect(await count('select count(*)::int as n from widgets where name = $1', [name])).toBe(0);
    expect(await outboxRows()).toBe(before);
  });

  it('lets a caller holding the permission write and publish', async () => {
    const writer = await signInAs(app, acme, ['widget:write']);
    const before = await outboxRows();
    const name = `guarded-${randomUUID()}`;
    const { answer } = await app.services.transactions.runStatement(
      acme,
      {
        statement: { text: UNGUARDED, values: [name] },
        permission: 'widget:write',
        events: [{ name: 'testkit.widget.created', payload: { id: randomUUID() } }],
      },
      { sessionHash: hashSecret(writer.rawSessionId) },
    );
    expect(answer.ok).toBe(true);
    expect(await count('select count(*)::int as n from widgets where name = $1', [name])).toBe(1);
    expect(await outboxRows()).toBe(before + 1);
  });
});

describe('every one-exchange route', () => {
  const routes = (): { route: AnyRoute; entity: ResolvedEntity }[] =>
    app.services.routes.flatMap(({ route, entity }) =>
      'oneExchange' in route && route.oneExchange !== undefined && entity !== undefined ? [{ route, entity }] : [],
    );

  it('is among the routes (the generic list, read and create)', () => {
    expect(routes().length).toBeGreaterThan(3);
  });

  it('refuses a caller without its permission, who commits nothing and publishes nothing', async () => {
    let n = 0;
    for (const { route, entity } of routes()) {
      const permission = (route.access as { permission: string }).permission;
      if (app.services.registry.isOperatorPermission(permission)) continue;
      const table = entity.names.table;
      const rowsBefore = await count(`select count(*)::int as n from ${table}`);
      const outboxBefore = await outboxRows();
      const url = route.url.replace(':id', randomUUID());
      const agent = app.http('guarded.localhost');
      const schema = (route as RouteDefinition).schema;
      const res =
        route.method === 'POST'
          ? await agent
              .post(url)
              .set('Cookie', nobody.cookie)
              .send(checkedSample(schema.body!, ++n, `${route.operationId} body`) as object)
          : await agent.get(url).set('Cookie', nobody.cookie);
      expect(res.status, `${route.method} ${route.url}: ${JSON.stringify(res.body)}`).toBe(403);
      expect(await count(`select count(*)::int as n from ${table}`), `${route.method} ${route.url}`).toBe(rowsBefore);
      expect(await outboxRows(), `${route.method} ${route.url}`).toBe(outboxBefore);
    }
  });
});
