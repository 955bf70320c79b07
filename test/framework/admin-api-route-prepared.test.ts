import { describe, expect, it } from 'vitest';
import { prepareApiRoute, runApiRoute } from '../../framework/admin/api-route.ts';
import type { AdminPageContext, AdminPrepareContext } from '../../framework/contracts/admin.ts';
import type { RouteDefinition } from '../../framework/entity/define.ts';

/** What the route's handler and its step were handed, in the order they ran. */
type Seen = { step: string; input: Record<string, unknown> };

/** A route with a step before its transaction, which records what each part was given. */
function routeWithStep(seen: Seen[]): RouteDefinition {
  return {
    method: 'POST',
    url: '/api/v1/testkit/things/:id/seal',
    operationId: 'testkit-thing-seal',
    // No params schema: runApiRoute then hands the page's params on as given (api-route.ts, checkedParams).
    schema: {},
    beforeTransaction: async (input: Record<string, unknown>) => {
      seen.push({ step: 'before', input });
      return { sealedWith: 'digest' };
    },
    handler: async (input: Record<string, unknown>) => {
      seen.push({ step: 'handler', input });
      return { ok: true };
    },
  } as unknown as RouteDefinition;
}

// The page's request, reply and services are passed through untouched; their content is not the rule here.
const pageContext = { request: {}, reply: {}, services: {}, tx: { name: 'the page transaction' } };

describe("a hand-written page runs an API route with a step before its transaction only with the step's result", () => {
  it('refuses to run the route in the page transaction without what prepareApiRoute prepared, naming the route', async () => {
    const seen: Seen[] = [];
    const route = routeWithStep(seen);
    expect(() => runApiRoute(route, pageContext as unknown as AdminPageContext, { params: { id: 'a' } })).toThrow(
      /POST \/api\/v1\/testkit\/things\/:id\/seal has a step before its transaction: prepare it in the page's beforeTransaction \(prepareApiRoute\)/,
    );
    // Neither the step (too late inside the transaction) nor the handler ran.
    expect(seen).toEqual([]);
  });

  it("runs the step with no transaction, then hands its result to the handler inside the page's transaction", async () => {
    const seen: Seen[] = [];
    const route = routeWithStep(seen);
    const parts = { params: { id: 'a' }, body: { note: 'x' } };
    const prepared = await prepareApiRoute(
      route,
      { ...pageContext, tx: undefined, session: { userId: 'u' } } as unknown as AdminPrepareContext,
      parts,
    );
    expect(prepared).toEqual({ sealedWith: 'digest' });
    await expect(
      runApiRoute(route, pageContext as unknown as AdminPageContext, { ...parts, prepared }),
    ).resolves.toEqual({ ok: true });
    expect(seen.map((s) => s.step)).toEqual(['before', 'handler']);
    expect(seen[0]?.input).toMatchObject({ params: { id: 'a' }, body: { note: 'x' }, session: { userId: 'u' } });
    expect(seen[0]?.input).not.toHaveProperty('tx');
    expect(seen[1]?.input).toMatchObject({ params: { id: 'a' }, prepared: { sealedWith: 'digest' } });
    expect(seen[1]?.input.tx).toBe(pageContext.tx);
  });

  it('runs a route without a step directly, with an empty query and no body when none is given', async () => {
    const seen: Seen[] = [];
    const route = { ...routeWithStep(seen), beforeTransaction: undefined } as RouteDefinition;
    await expect(prepareApiRoute(route, pageContext as unknown as AdminPrepareContext)).resolves.toBeUndefined();
    await runApiRoute(route, pageContext as unknown as AdminPageContext);
    expect(seen).toEqual([
      { step: 'handler', input: expect.objectContaining({ params: {}, query: {}, body: null, tx: pageContext.tx }) },
    ]);
  });
});
