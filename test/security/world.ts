import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { CompiledQuery } from 'kysely';
import { startTestApp, OPERATOR_HOST, type TestApp } from '../helpers/app.ts';
import { cheapPasswordHasher } from '../helpers/cheap-password-hasher.ts';
import { allModules } from '../../modules/index.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { hashSecret, newSessionId, sessionCookie } from '../../framework/access/session-cookie.ts';
import { notify } from '../../modules/notification/notify.ts';
import { Client, describeExchange, type Answer, type Sent } from './harness.ts';
import { addEntityRows } from './world-rows.ts';

/**
 * The world the security suite attacks: the installation's modules (nothing test-only), the
 * operator tenant and two customer tenants made through the API, and in each tenant an admin, a
 * member and one person per permission the tenant may grant, each holding exactly a role made
 * through the API with that one permission, signed in through the login route. Every entity has
 * rows in every tenant (a global one at the operator), made through its create route with bodies
 * derived from its declarations (addEntityRows), so a module's new entity needs nothing here; the
 * hand-written routes' rows (files, notifications, tokens, exports, imports, roles) are made by hand.
 */

export interface Actor {
  label: string;
  userId: string;
  email: string;
  password: string;
  /** The Cookie header value. */
  cookie: string;
  rawSessionId: string;
  /** The permissions of the actor's role ('*' for the admin, none for the member). */
  permissions: readonly string[];
  /** A personal access token of the actor holding those same permissions (for Authorization: Bearer). */
  token: string;
}

/** The rows of the hand-written routes (an entity's rows are in TenantWorld.entityRows). */
export interface Rows {
  /** The slug of a published content page (the public read answers the world's draft 404). */
  publishedSlug: string;
  privateFile: string;
  publicFile: string;
  /** A notification addressed to the admin (owner-scoped: only the admin may read it). */
  adminNotification: string;
  memberNotification: string;
  /** A role only this tenant has. */
  role: string;
  /** A personal access token of the admin's, other than the admin's own bearer token (the {id} of the token operations). */
  accessToken: string;
  /** An export of this tenant, queued by its admin (the {id} of the tenant export operations). */
  tenantExport: string;
  /** An import of tasks into this tenant, a dry run (the {id} of GET /api/v1/imports/{id}). */
  taskImport: string;
}

export interface TenantWorld {
  ref: TenantRef;
  host: string;
  admin: Actor;
  member: Actor;
  /** One actor per permission this tenant may grant, holding exactly that one. */
  holder: Map<string, Actor>;
  rows: Rows;
  /** Each tenant-owned collection entity's rows here, by entity key (`task.task`), as their creates answered. */
  entityRows: Map<string, Record<string, unknown>[]>;
  /** Every actor of the tenant. */
  actors: Actor[];
  /** Raw bearer tokens of the admin that no longer count: one past its expiry, one revoked. */
  expiredToken: string;
  revokedToken: string;
}

export interface World {
  app: TestApp;
  client: Client;
  operator: TenantWorld;
  a: TenantWorld;
  b: TenantWorld;
  tenants: TenantWorld[];
  /** A tenant the destructive sweeps may suspend and write to (tenant operations' {id}). */
  spareTenantId: string;
  /** The spare tenant's host, for the operator's host routes. */
  spareHost: string;
  /** Global rows: the plans the world subscribes to, and each global entity's rows by entity key, made at the operator. */
  plans: { free: string; spare: string };
  globalRows: Map<string, Record<string, unknown>[]>;
  /** Every permission the installation defines, and which of them are operator permissions. */
  permissions: string[];
  isOperatorPermission(name: string): boolean;
  /** Sends through the client and fails loudly when a set-up step is refused. */
  must(req: Sent, ...expected: number[]): Promise<Answer>;
}

export const PASSWORD = 'correct horse battery staple';
const hostOf = (slug: string) => `${slug}.localhost`;
/** People made at once while the world is built: under the test app's pool of five connections. */
const PEOPLE_AT_ONCE = 3;

/** Runs the functions given to it with at most `most` of them unfinished at any time, in the order given. */
function limit(most: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (fn) => {
    if (running < most) running += 1;
    // A finished function hands its place to the next waiting one.
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  };
}

/** What a world is made of besides its app and client (world-template.ts keeps these for each copy). */
export type WorldParts = Pick<World, 'operator' | 'a' | 'b' | 'spareTenantId' | 'spareHost' | 'plans' | 'globalRows'>;

/** The world of these parts, served by this app and sent to through this client. */
export function worldOf(app: TestApp, client: Client, parts: WorldParts): World {
  const registry = app.services.registry;
  return {
    app,
    client,
    ...parts,
    tenants: [parts.a, parts.b, parts.operator],
    permissions: [...registry.permissions.keys()].sort(),
    isOperatorPermission: (p: string) => registry.isOperatorPermission(p),
    must: mustOf(client),
  };
}

/** Sends through the client and fails loudly when a set-up step is refused. */
const mustOf =
  (client: Client) =>
  async (req: Sent, ...expected: number[]): Promise<Answer> => {
    const res = await client.send(req);
    if (!(expected.length ? expected.includes(res.status) : res.status < 300))
      throw new Error(`world set-up refused: ${describeExchange(req, res)}`);
    return res;
  };

/**
 * Starts the service (all modules, listening on 127.0.0.1) on the given database (a copy of the
 * run's migrated template when none is given) and builds the world through its API. The suite's
 * files take it built once per run, from world-template.ts.
 */
export async function buildWorld(prefix: string, databaseUrl?: string): Promise<World> {
  // Some 56 people a world, each hashed once: a cheap argon2id hasher (test/helpers) keeps the set-up
  // from spending seconds of CPU on cost parameters no test here is about; logins still verify.
  const app = await startTestApp({
    modules: allModules,
    passwordHasher: cheapPasswordHasher,
    ...(databaseUrl ? { databaseUrl } : {}),
  });
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  const client = new Client((app.web!.server.address() as AddressInfo).port);
  const must = mustOf(client);
  const registry = app.services.registry;
  const permissions = [...registry.permissions.keys()].sort();
  const isOperatorPermission = (p: string) => registry.isOperatorPermission(p);

  // The first administrator of a tenant is an explicit fixture: the invitation mails a link the
  // suite does not read, so the bootstrap session is written straight into the tenant's tables.
  const bootstrap = async (tenant: TenantRef) => {
    const raw = newSessionId();
    await app.services.transactions.run(tenant, async (ctx) => {
      const user = await ctx.db.executeQuery<{ id: string }>(
        CompiledQuery.raw(
          `insert into users (email, display_name, status, roles) values ($1, 'Bootstrap', 'active', '{admin}') returning id`,
          [`bootstrap@${tenant.slug}.example.test`],
        ),
      );
      await ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into sessions (id_hash, user_id, expires_at) values ($1, $2, now() + interval '1 day')`,
          [hashSecret(raw), user.rows[0]!.id],
        ),
      );
    });
    return `${sessionCookie(app.config).name}=${raw}`;
  };

  const operatorBoot = await bootstrap(app.operator);
  const makeTenant = async (slug: string): Promise<TenantRef> => {
    const res = await must(
      {
        method: 'POST',
        host: OPERATOR_HOST,
        path: '/api/v1/tenant/tenants',
        cookie: operatorBoot,
        json: { slug, name: `Tenant ${slug}`, host: hostOf(slug) },
      },
      201,
    );
    return { id: String(res.json!.id), slug, isOperator: false };
  };
  const refA = await makeTenant(`${prefix}-a`);
  const refB = await makeTenant(`${prefix}-b`);
  const spare = await makeTenant(`${prefix}-spare`);

  const plan = async (code: string, price: number) =>
    String(
      (
        await must(
          {
            method: 'POST',
            host: OPERATOR_HOST,
            path: '/api/v1/billing/plans',
            cookie: operatorBoot,
            json: {
              code,
              name: `Plan ${code}`,
              price,
              currency: 'EUR',
              interval: 'month',
              // Every declared feature: the matrix's tenants may use every route (issue 47 gates some by plan).
              features: [...registry.features.keys()],
              active: true,
            },
          },
          201,
        )
      ).json!.id,
    );
  const plans = { free: await plan(`${prefix}-free`, 0), spare: await plan(`${prefix}-spare`, 500) };

  // People are made a few at a time across the three tenants, never all at once: each one's
  // set-password hashes and its login verifies an argon2id password, ~100 ms of CPU each. Both now
  // run with no transaction open (set-password's step before its transaction), but when set-password
  // still hashed inside its transaction, about fifty at once on a loaded machine (this suite inside
  // the new-module acceptance test's copy, beside the outer run's files) held every one of the pool's
  // five connections past the 3 s acquire timeout (503 DB_BUSY). On two cores more hashes at once
  // are no faster, so the limit stays.
  const fewAtATime = limit(PEOPLE_AT_ONCE);
  const populate = async (ref: TenantRef, host: string, boot: string): Promise<TenantWorld> => {
    const as = (cookie: string, method: string, path: string, json?: unknown, ...expected: number[]) =>
      must({ method, host, path, cookie, ...(json === undefined ? {} : { json }) }, ...expected);
    const grantable = permissions.filter((p) => ref.isOperator || !isOperatorPermission(p));
    for (const p of grantable) await as(boot, 'PUT', `/api/v1/auth/roles/only-${p}`, { permissions: [p] });
    const person = (label: string, roles: string[], perms: string[]): Promise<Actor> =>
      fewAtATime(() => makePerson(label, roles, perms));
    const makePerson = async (label: string, roles: string[], perms: string[]): Promise<Actor> => {
      const email = `${label.replaceAll(':', '-')}@${ref.slug}.example.test`;
      const invited = await as(
        boot,
        'POST',
        '/api/v1/user/invitations',
        { email, displayName: `${label} of ${ref.slug}`, roles },
        201,
      );
      const userId = String(invited.json!.id);
      await as(boot, 'POST', `/api/v1/user/users/${userId}/set-password`, { password: PASSWORD });
      const login = await must(
        { method: 'POST', host, path: '/api/v1/auth/login', json: { email, password: PASSWORD } },
        200,
      );
      const setCookie = ([] as string[])
        .concat(login.headers['set-cookie'] ?? [])
        .find((c) => c.startsWith(`${sessionCookie(app.config).name}=`));
      if (!setCookie) throw new Error(`login of ${email} set no session cookie`);
      const cookie = setCookie.split(';')[0]!;
      const token = String(
        (await as(cookie, 'POST', '/api/v1/auth/tokens', { name: `${label} token`, permissions: perms }, 201)).json!
          .token,
      );
      return {
        label,
        userId,
        email,
        password: PASSWORD,
        cookie,
        rawSessionId: cookie.slice(cookie.indexOf('=') + 1),
        permissions: perms,
        token,
      };
    };
    const admin = await person('admin', ['admin'], ['*']);
    const member = await person('member', ['member'], []);
    const holders = await Promise.all(grantable.map((p) => person(`only-${p}`, [`only-${p}`], [p])));
    const holder = new Map(grantable.map((p, i) => [p, holders[i]!]));

    const content = async (slug: string, kind: string) =>
      String(
        (
          await as(
            admin.cookie,
            'POST',
            '/api/v1/content/contents',
            { slug, title: `Title ${slug}`, kind, body: `Body of ${slug}` },
            201,
          )
        ).json!.id,
      );
    const published = await content(`${ref.slug}-page`, 'page');
    await as(admin.cookie, 'POST', `/api/v1/content/contents/${published}/publish`);
    const upload = async (visibility: string) => {
      const boundary = `----sec${randomUUID()}`;
      const body = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${visibility}.txt"\r\nContent-Type: text/plain\r\n\r\n${visibility} bytes of ${ref.slug}\r\n--${boundary}--\r\n`,
      );
      const res = await must(
        {
          method: 'POST',
          host,
          path: `/api/v1/file/files?visibility=${visibility}`,
          cookie: admin.cookie,
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
          body,
        },
        201,
      );
      return String(res.json!.id);
    };
    const privateFile = await upload('private');
    const publicFile = await upload('public');
    const tenantExport = String((await as(admin.cookie, 'POST', '/api/v1/tenant/export', undefined, 202)).json!.id);
    const taskImport = await (async () => {
      const boundary = `----sec${randomUUID()}`;
      const body = Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="tasks.csv"\r\nContent-Type: text/csv\r\n\r\ntitle,priority\r\nImported task of ${ref.slug},low\r\n\r\n--${boundary}--\r\n`,
      );
      const res = await must(
        {
          method: 'POST',
          host,
          path: '/api/v1/task/tasks/import?dryRun=true',
          cookie: admin.cookie,
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
          body,
        },
        202,
      );
      return String(res.json!.id);
    })();
    // Notifications have no create route: Notify is a module service, so they are a fixture.
    const note = (recipientId: string, title: string) =>
      app.services.transactions.run(
        ref,
        async (ctx) =>
          (await notify(ctx, { recipientId, title, body: `${title} body`, link: '/admin', email: false })).id,
      );
    const adminNotification = await note(admin.userId, `For the admin of ${ref.slug}`);
    const memberNotification = await note(member.userId, `For the member of ${ref.slug}`);
    const role = `own-${ref.slug}`;
    await as(boot, 'PUT', `/api/v1/auth/roles/${role}`, { permissions: ['content:read'] });
    if (!ref.isOperator)
      await as(admin.cookie, 'POST', '/api/v1/billing/subscription/subscribe', { planId: plans.free });
    const adminToken = async (name: string) =>
      (await as(admin.cookie, 'POST', '/api/v1/auth/tokens', { name, permissions: ['*'] }, 201)).json!;
    const accessToken = String((await adminToken('sample')).id);
    const expired = await adminToken('expired');
    await app.services.db.pool.query(
      `update access_tokens set expires_at = now() - interval '1 second' where id = $1`,
      [expired.id],
    );
    const revoked = await adminToken('revoked');
    await as(admin.cookie, 'DELETE', `/api/v1/auth/tokens/${revoked.id}`, undefined, 204);

    return {
      ref,
      host,
      admin,
      member,
      holder,
      entityRows: new Map(),
      actors: [admin, member, ...holders],
      rows: {
        publishedSlug: `${ref.slug}-page`,
        privateFile,
        publicFile,
        adminNotification,
        memberNotification,
        role,
        accessToken,
        tenantExport,
        taskImport,
      },
      expiredToken: String(expired.token),
      revokedToken: String(revoked.token),
    };
  };

  const [operator, a, b] = await Promise.all([
    populate(app.operator, OPERATOR_HOST, operatorBoot),
    bootstrap(refA).then((boot) => populate(refA, hostOf(refA.slug), boot)),
    bootstrap(refB).then((boot) => populate(refB, hostOf(refB.slug), boot)),
  ]);
  const world = worldOf(app, client, {
    operator: operator!,
    a: a!,
    b: b!,
    spareTenantId: spare.id,
    spareHost: hostOf(spare.slug),
    plans,
    globalRows: new Map(),
  });
  await addEntityRows(world);
  return world;
}

export async function closeWorld(world: World | undefined): Promise<void> {
  world?.client.close();
  await world?.app.close();
}
