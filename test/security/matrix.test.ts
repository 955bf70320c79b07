import { afterAll, describe, expect, it } from 'vitest';
import { closeWorld, type TenantWorld } from './world.ts';
import { openWorld } from './world-template.ts';
import { homeTenants, pathSource, readOperations, validRequest, type Operation } from './operations.ts';
import { expectRefusal, badAnswer } from './problems.ts';
import { describeExchange, type Sent } from './harness.ts';
import { fetchDocument, nothingLostNothingLeaked } from './ledger.ts';

/**
 * The access matrix, driven by the live OpenAPI document: every operation it lists is attacked at
 * every tenant where it lives, so a route added tomorrow is covered without a test of its own.
 */
const world = await openWorld();
const operations = readOperations(await fetchDocument(world), world.isOperatorPermission);

afterAll(async () => {
  console.log(`security matrix: ${operations.length} operations, ${world.client.requests} requests`);
  await closeWorld(world);
});

const other = (t: TenantWorld): TenantWorld => (t === world.a ? world.b : world.a);
const isGuarded = (op: Operation) => op.access !== 'public' && op.access !== 'optional';
const pathParams = (op: Operation) => op.params.filter((p) => p.in === 'path').map((p) => p.name);
const send = (req: Sent) => world.client.send(req);
let addresses = 0;
/** A documentation address (RFC 5737, 198.51.100.0/24 onwards) per refused bearer attempt. */
const nextAddress = () => {
  addresses += 1;
  return `198.51.${100 + (addresses >> 8)}.${addresses & 255}`;
};
/**
 * The member (signed in, holding no permission) asks, at every tenant where the operation lives,
 * for a row that is the admin's own: refused with this status and code.
 */
async function memberRefused(op: Operation, status: number, code: string): Promise<void> {
  for (const t of homeTenants(op, world)) {
    const req = validRequest(op, world, t, t.member.cookie);
    expectRefusal(req, await send(req), status, code, `the member at ${t.ref.slug} asking for the admin's row`);
  }
}
/** Registers a rule's test only where the rule applies: the report lists what ran, nothing shows as skipped. */
const rule = (applies: boolean) => (applies ? it : ((() => {}) as unknown as typeof it));

describe.each(operations.map((op) => [`${op.id} (${op.method} ${op.path}, ${op.access})`, op] as const))(
  '%s',
  (_name, op) => {
    it('every path parameter has a sample in every tenant (an operation the suite cannot exercise fails here)', () => {
      for (const param of pathParams(op))
        for (const t of world.tenants)
          expect(pathSource(op, param).value(world, t), `${op.id} {${param}} at ${t.ref.slug}`).toBeTruthy();
    });

    rule(isGuarded(op))('no cookie: 401 AUTH_REQUIRED', async () => {
      for (const t of homeTenants(op, world)) {
        const req = validRequest(op, world, t);
        expectRefusal(req, await send(req), 401, 'AUTH_REQUIRED', 'no cookie');
      }
    });

    rule(!isGuarded(op))('no cookie on a public operation: answered without AUTH_REQUIRED, never a 5xx', async () => {
      for (const t of homeTenants(op, world)) {
        const req = validRequest(op, world, t);
        const res = await send(req);
        expect(res.json?.code, describeExchange(req, res)).not.toBe('AUTH_REQUIRED');
        expect(badAnswer(res), describeExchange(req, res)).toBeUndefined();
      }
    });

    rule(op.permission !== undefined)(
      'a session lacking the permission: 403 AUTH_FORBIDDEN (the member and every one-permission holder of another permission)',
      async () => {
        for (const t of homeTenants(op, world)) {
          const lacking = [
            t.member,
            ...[...t.holder.entries()].filter(([p]) => p !== op.permission).map(([, actor]) => actor),
          ];
          expect(lacking.length).toBeGreaterThan(1);
          for (const actor of lacking) {
            const req = validRequest(op, world, t, actor.cookie);
            expectRefusal(req, await send(req), 403, 'AUTH_FORBIDDEN', `${actor.label} at ${t.ref.slug}`);
          }
        }
      },
    );

    rule(op.permission !== undefined)('the holder of exactly that permission passes the guard', async () => {
      for (const t of homeTenants(op, world)) {
        const actor = t.holder.get(op.permission!);
        expect(actor, `no holder of ${op.permission} at ${t.ref.slug}`).toBeDefined();
        // A random id keeps a destructive operation harmless: past the guard it is a 404.
        const ids = Object.fromEntries(
          pathParams(op)
            .filter((p) => pathSource(op, p).scope !== 'name')
            .map((p) => [p, crypto.randomUUID()]),
        );
        const req = validRequest(op, world, t, actor!.cookie, ids);
        const res = await send(req);
        expect([401, 403], describeExchange(req, res)).not.toContain(res.status);
        expect(badAnswer(res), describeExchange(req, res)).toBeUndefined();
      }
    });

    rule(op.feature !== undefined)(
      'a tenant on a plan lacking its feature: 403 FEATURE_NOT_IN_PLAN naming the feature, for the holder of the permission',
      async () => {
        const declared = [...world.app.services.registry.features.keys()];
        for (const t of homeTenants(op, world).filter((home) => !home.ref.isOperator)) {
          // The operator narrows this tenant's features to all but the operation's, then gives them back.
          const override = (features: string[] | undefined) =>
            world.must(
              {
                method: 'PUT',
                host: world.operator.host,
                path: `/api/v1/tenant/tenants/${t.ref.id}/entitlements`,
                cookie: world.operator.admin.cookie,
                json: features ? { features } : {},
              },
              200,
            );
          await override(declared.filter((f) => f !== op.feature));
          try {
            const actor = op.permission ? t.holder.get(op.permission)! : t.admin;
            const req = validRequest(op, world, t, actor.cookie);
            const res = await send(req);
            expectRefusal(
              req,
              res,
              403,
              'FEATURE_NOT_IN_PLAN',
              `${actor.label} at ${t.ref.slug} without ${op.feature}`,
            );
            expect(res.json?.feature, describeExchange(req, res)).toBe(op.feature);
          } finally {
            await override(undefined);
          }
        }
      },
    );

    const rowAccess = pathParams(op).some((p) => pathSource(op, p).rowAccess === 'permission') ? 'permission' : 'owner';
    rule(op.access === 'signedIn' && pathParams(op).length > 0 && rowAccess === 'owner')(
      "another person's row (owner-scoped): 404 NOT_FOUND, as the SPEC says",
      () => memberRefused(op, 404, 'NOT_FOUND'),
    );

    rule(op.access === 'signedIn' && rowAccess === 'permission')(
      'a row whose list the caller may not write (the member, holding no permission): 403 AUTH_FORBIDDEN, as the route documents',
      () => memberRefused(op, 403, 'AUTH_FORBIDDEN'),
    );

    rule(pathParams(op).some((p) => pathSource(op, p).scope === 'tenant'))(
      "tenant B's ids on tenant A's host: 404",
      async () => {
        for (const t of homeTenants(op, world)) {
          const foreign = other(t);
          const ids = Object.fromEntries(pathParams(op).map((p) => [p, pathSource(op, p).value(world, foreign)]));
          const req = validRequest(op, world, t, t.admin.cookie, ids);
          const res = await send(req);
          expect(res.status, `another tenant's id at ${t.ref.slug}: ${describeExchange(req, res)}`).toBe(404);
          expect(['NOT_FOUND'], describeExchange(req, res)).toContain(res.json?.code);
        }
      },
    );

    rule(pathParams(op).some((p) => ['global', 'control-plane'].includes(pathSource(op, p).scope)))(
      'an {id} that no tenant owns (a global row, a tenant of the control plane): writes are operator-only, a read answers every tenant the same',
      async () => {
        if (op.operator) {
          // Refused at every customer host before anything else (the AUTH_NOT_OPERATOR rule above).
          for (const t of [world.a, world.b]) {
            const req = validRequest(op, world, t, t.admin.cookie);
            expectRefusal(req, await send(req), 403, 'AUTH_NOT_OPERATOR', `operator operation at ${t.ref.slug}`);
          }
          return;
        }
        expect(op.method, `${op.id} writes a row no tenant owns without an operator permission`).toBe('GET');
        const [atA, atB] = [
          await send(validRequest(op, world, world.a, world.a.admin.cookie)),
          await send(validRequest(op, world, world.b, world.b.admin.cookie)),
        ];
        expect(atA.status).toBe(200);
        expect(atB.json, 'the same shared row at every tenant').toEqual(atA.json);
      },
    );

    rule(pathParams(op).some((p) => pathSource(op, p).scope === 'name'))(
      "tenant B's role name on tenant A's host writes only in tenant A",
      async () => {
        const [a, b] = [world.a, world.b];
        const before = await send({
          method: 'GET',
          host: b.host,
          path: '/api/v1/auth/roles?limit=100',
          cookie: b.admin.cookie,
        });
        const req = validRequest(
          op,
          world,
          a,
          a.admin.cookie,
          Object.fromEntries(pathParams(op).map((p) => [p, pathSource(op, p).value(world, b)])),
        );
        const res = await send(req);
        expect(badAnswer(res), describeExchange(req, res)).toBeUndefined();
        expect(res.text, 'the answer names nothing of tenant B').not.toContain(b.ref.id);
        const after = await send({
          method: 'GET',
          host: b.host,
          path: '/api/v1/auth/roles?limit=100',
          cookie: b.admin.cookie,
        });
        expect(after.json, "tenant B's roles are unchanged").toEqual(before.json);
      },
    );

    rule(isGuarded(op) || op.access === 'optional')(
      "tenant B's cookie on tenant A's host: 401 (a session of another tenant is not a session here)",
      async () => {
        for (const t of homeTenants(op, world)) {
          const stranger = t === world.operator ? world.a.admin : other(t).admin;
          const req = validRequest(op, world, t, stranger.cookie);
          const res = await send(req);
          if (op.access === 'optional') {
            // Signing out with a cookie this tenant does not know is not an error, and ends nothing elsewhere.
            expect(badAnswer(res), describeExchange(req, res)).toBeUndefined();
            expect(res.status, describeExchange(req, res)).toBeLessThan(300);
            const owner = t === world.operator ? world.a : other(t);
            const me = await send({
              method: 'GET',
              host: owner.host,
              path: '/api/v1/auth/me',
              cookie: stranger.cookie,
            });
            expect(me.status, 'the stranger is still signed in at home').toBe(200);
          } else {
            expectRefusal(req, res, 401, 'AUTH_REQUIRED', `a cookie of another tenant at ${t.ref.slug}`);
          }
        }
      },
    );

    // Bearer callers (personal access tokens), on every operation that takes one. Each refused
    // attempt comes from an address of its own: failed attempts count towards the address's
    // sign-in limit, which would otherwise turn the rest of the matrix into 429s.
    const withBearer = (req: Sent, token: string, refused = false): Sent => ({
      ...req,
      headers: {
        ...(req.headers ?? {}),
        authorization: `Bearer ${token}`,
        ...(refused ? { 'x-forwarded-for': nextAddress() } : {}),
      },
    });

    rule(op.bearer && op.access !== 'optional')(
      "bearer tokens that do not count: none after the scheme, an expired one, a revoked one, another tenant's: 401 TOKEN_INVALID",
      async () => {
        for (const t of homeTenants(op, world)) {
          const foreign = t === world.operator ? world.a : other(t);
          const tokens: [string, string][] = [
            ['no token', ''],
            ['expired', t.expiredToken],
            ['revoked', t.revokedToken],
            ["another tenant's", foreign.admin.token],
          ];
          for (const [label, token] of tokens) {
            const req = withBearer(validRequest(op, world, t), token, true);
            expectRefusal(req, await send(req), 401, 'TOKEN_INVALID', `${label} bearer token at ${t.ref.slug}`);
          }
        }
      },
    );

    rule(op.bearer && op.permission !== undefined)(
      "a bearer token lacking the permission: 403 AUTH_FORBIDDEN (the member's, and one holding another permission)",
      async () => {
        for (const t of homeTenants(op, world)) {
          const otherHolder = [...t.holder.entries()].find(([p]) => p !== op.permission)![1];
          for (const actor of [t.member, otherHolder]) {
            const req = withBearer(validRequest(op, world, t), actor.token);
            expectRefusal(
              req,
              await send(req),
              403,
              'AUTH_FORBIDDEN',
              `the bearer token of ${actor.label} at ${t.ref.slug}`,
            );
          }
        }
      },
    );

    rule(op.bearer && op.permission !== undefined)(
      "a bearer token of exactly that permission's holder passes the guard",
      async () => {
        for (const t of homeTenants(op, world)) {
          const actor = t.holder.get(op.permission!)!;
          const ids = Object.fromEntries(
            pathParams(op)
              .filter((p) => pathSource(op, p).scope !== 'name')
              .map((p) => [p, crypto.randomUUID()]),
          );
          const req = withBearer(validRequest(op, world, t, undefined, ids), actor.token);
          const res = await send(req);
          expect([401, 403], describeExchange(req, res)).not.toContain(res.status);
          expect(badAnswer(res), describeExchange(req, res)).toBeUndefined();
        }
      },
    );

    rule(!op.bearer && isGuarded(op))(
      'takes the session cookie only: a bearer token alone is no session, 401 AUTH_REQUIRED',
      async () => {
        for (const t of homeTenants(op, world)) {
          const req = withBearer(validRequest(op, world, t), t.admin.token);
          expectRefusal(req, await send(req), 401, 'AUTH_REQUIRED', `the admin's bearer token at ${t.ref.slug}`);
        }
      },
    );

    rule(op.operator)(
      'from a customer host: 403 AUTH_NOT_OPERATOR before anything else (no cookie, an admin holding *, a foreign Origin, a broken body)',
      async () => {
        for (const t of [world.a, world.b]) {
          const base = validRequest(op, world, t);
          const variants: Sent[] = [
            base,
            { ...base, cookie: t.admin.cookie },
            {
              ...base,
              cookie: t.admin.cookie,
              headers: { ...(base.headers ?? {}), origin: 'https://attacker.example' },
            },
            {
              ...base,
              cookie: t.admin.cookie,
              json: undefined,
              body: '{"broken',
              headers: { 'content-type': 'application/json' },
            },
          ];
          for (const req of variants)
            expectRefusal(req, await send(req), 403, 'AUTH_NOT_OPERATOR', `operator operation at ${t.ref.slug}`);
        }
      },
    );

    rule(op.stateChanging)(
      'a foreign Origin (another site, a sibling tenant, null) or Sec-Fetch-Site cross-site/same-site: 403 AUTH_CROSS_SITE',
      async () => {
        for (const t of homeTenants(op, world)) {
          // Another site, a sibling tenant under the same registrable domain, and the opaque origin.
          for (const origin of ['https://attacker.example', `http://${other(t).host}`, 'null']) {
            const req = validRequest(op, world, t, t.admin.cookie);
            req.headers = { ...(req.headers ?? {}), origin };
            expectRefusal(req, await send(req), 403, 'AUTH_CROSS_SITE', `Origin ${origin} at ${t.ref.slug}`);
          }
          for (const site of ['cross-site', 'same-site']) {
            const req = validRequest(op, world, t, t.admin.cookie);
            req.headers = { ...(req.headers ?? {}), 'sec-fetch-site': site, origin: `http://${t.host}` };
            expectRefusal(req, await send(req), 403, 'AUTH_CROSS_SITE', `Sec-Fetch-Site ${site} at ${t.ref.slug}`);
          }
        }
      },
    );
  },
);

await nothingLostNothingLeaked(world, () => operations.length);
