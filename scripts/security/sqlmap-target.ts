/**
 * The target of scripts/security/sqlmap.sh: starts the service on 127.0.0.1 with an embedded
 * PostgreSQL in a scratch directory, builds through its API an operator and a customer tenant,
 * each with a signed-in admin and rows of every entity (made as the security suite's world makes
 * them, derived from the declarations: test/security/world-rows.ts), and writes one line per injection
 * point (every query parameter, JSON body field and path parameter of the live OpenAPI document)
 * to <dir>/targets.jsonl. Then it serves until SIGTERM.
 *
 *   node scripts/security/sqlmap-target.ts <scratch dir>
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { CompiledQuery } from 'kysely';
import { startEmbeddedPostgres, ensureDatabase } from '../../framework/db/embedded.ts';
import { validateConfig } from '../../framework/config/load.ts';
import { buildApp } from '../../framework/app.ts';
import { allModules } from '../../modules/index.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { hashSecret, newSessionId, sessionCookie } from '../../framework/access/session-cookie.ts';
import { Client, type Sent } from '../../test/security/harness.ts';
import { readOperations, validRequest, type Operation } from '../../test/security/operations.ts';
import type { TenantWorld, World } from '../../test/security/world.ts';
import { addEntityRows } from '../../test/security/world-rows.ts';
import { dereferenced } from '../../test/helpers/openapi.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: node scripts/security/sqlmap-target.ts <scratch dir>');
const OPERATOR_HOST = 'operator.localhost';
const PASSWORD = 'correct horse battery staple';

const embedded = await startEmbeddedPostgres({ dir: join(dir, 'pg'), port: 5400 + Math.floor(Math.random() * 500) });
const databaseUrl = await ensureDatabase(embedded.adminUrl, 'tenantry');
const config = validateConfig(
  {
    server: { public_host: OPERATOR_HOST, log_level: 'silent', host: '127.0.0.1', port: 0 },
    files: { dir: join(dir, 'files') },
  },
  'sqlmap-target',
);
const app = await buildApp({
  config,
  modules: allModules,
  databaseUrl,
  role: 'web',
  startWorker: false,
  scheduleJobs: false,
});
await app.web!.listen({ host: '127.0.0.1', port: 0 });
const port = (app.web!.server.address() as AddressInfo).port;
const client = new Client(port);
const must = async (req: Sent) => {
  const res = await client.send(req);
  if (res.status >= 300) throw new Error(`set-up refused: ${req.method} ${req.path} → ${res.status} ${res.text}`);
  return res;
};
const { rows } = await app.services.db.pool.query<{ id: string; slug: string }>(
  'select id, slug from tenants where is_operator',
);
const operatorRef: TenantRef = { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true };

/** The first administrator is written straight into the tenant: the invitation mails a link nobody reads here. */
async function bootstrap(tenant: TenantRef): Promise<string> {
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
  return `${sessionCookie(config).name}=${raw}`;
}

const operatorCookie = await bootstrap(operatorRef);
const made = async (slug: string) => ({
  id: String(
    (
      await must({
        method: 'POST',
        host: OPERATOR_HOST,
        path: '/api/v1/tenant/tenants',
        cookie: operatorCookie,
        json: { slug, name: slug, host: `${slug}.localhost` },
      })
    ).json!.id,
  ),
  slug,
  isOperator: false,
});
const customer: TenantRef = await made('sqlmap-a');
const spare = await made('sqlmap-spare');
const plan = async (code: string, price: number) =>
  String(
    (
      await must({
        method: 'POST',
        host: OPERATOR_HOST,
        path: '/api/v1/billing/plans',
        cookie: operatorCookie,
        json: {
          code,
          name: code,
          price,
          currency: 'EUR',
          interval: 'month',
          // Every declared feature: the customer's rows of every entity (a gated one among them) are made after subscribing.
          features: [...app.services.registry.features.keys()],
          active: true,
        },
      })
    ).json!.id,
  );
const plans = { free: await plan('sqlmap-free', 0), spare: await plan('sqlmap-spare', 100) };

async function populate(ref: TenantRef, host: string, boot: string): Promise<TenantWorld> {
  const as = (method: string, path: string, json: unknown) => must({ method, host, path, cookie: boot, json });
  const person = async (label: string, roles: string[]) => {
    const email = `${label}@${ref.slug}.example.test`;
    const userId = String((await as('POST', '/api/v1/user/invitations', { email, roles })).json!.id);
    await as('POST', `/api/v1/user/users/${userId}/set-password`, { password: PASSWORD });
    const login = await must({ method: 'POST', host, path: '/api/v1/auth/login', json: { email, password: PASSWORD } });
    const cookie = ([] as string[]).concat(login.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
    const token = String(
      (
        await must({
          method: 'POST',
          host,
          path: '/api/v1/auth/tokens',
          cookie,
          json: { name: label, permissions: [] },
        })
      ).json!.token,
    );
    return {
      label,
      userId,
      email,
      password: PASSWORD,
      cookie,
      rawSessionId: cookie.split('=')[1]!,
      permissions: [],
      token,
    };
  };
  const admin = await person('admin', ['admin']);
  const member = await person('member', ['member']);
  const content = String(
    (
      await as('POST', '/api/v1/content/contents', {
        slug: `${ref.slug}-page`,
        title: 'Page',
        kind: 'page',
        body: 'Body',
      })
    ).json!.id,
  );
  await as('POST', `/api/v1/content/contents/${content}/publish`, undefined);
  const boundary = 'sqlmap-boundary';
  const file = async (visibility: string) =>
    String(
      (
        await must({
          method: 'POST',
          host,
          path: `/api/v1/file/files?visibility=${visibility}`,
          cookie: boot,
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
          body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nbytes\r\n--${boundary}--\r\n`,
        })
      ).json!.id,
    );
  await as('PUT', `/api/v1/auth/roles/own-${ref.slug}`, { permissions: ['content:read'] });
  const accessToken = String(
    (
      await must({
        method: 'POST',
        host,
        path: '/api/v1/auth/tokens',
        cookie: admin.cookie,
        json: { name: 'sample', permissions: [] },
      })
    ).json!.id,
  );
  if (!ref.isOperator) await as('POST', '/api/v1/billing/subscription/subscribe', { planId: plans.free });
  const tenantExport = String((await as('POST', '/api/v1/tenant/export', undefined)).json!.id);
  const taskImport = String(
    (
      await must({
        method: 'POST',
        host,
        path: '/api/v1/task/tasks/import?dryRun=true',
        cookie: boot,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        body: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="tasks.csv"\r\nContent-Type: text/csv\r\n\r\ntitle,priority\r\nImported,low\r\n--${boundary}--\r\n`,
      })
    ).json!.id,
  );
  return {
    ref,
    host,
    admin,
    member,
    holder: new Map(),
    entityRows: new Map(),
    actors: [admin, member],
    rows: {
      publishedSlug: `${ref.slug}-page`,
      privateFile: await file('private'),
      publicFile: await file('public'),
      // No notification is made here: the notification routes are attacked with the member's id.
      adminNotification: member.userId,
      memberNotification: member.userId,
      role: `own-${ref.slug}`,
      accessToken,
      tenantExport,
      taskImport,
    },
    // The sqlmap targets send no bearer refusals; the fields are the admin's token only to complete the world.
    expiredToken: admin.token,
    revokedToken: admin.token,
  };
}

const operator = await populate(operatorRef, OPERATOR_HOST, operatorCookie);
const a = await populate(customer, `${customer.slug}.localhost`, await bootstrap(customer));
const world = {
  app,
  client,
  operator,
  a,
  b: a,
  tenants: [a, operator],
  spareTenantId: spare.id,
  plans,
  globalRows: new Map(),
  must: (req: Sent) => must(req),
} as unknown as World;
await addEntityRows(world);

// Bodies and answers are named schemas: the targets are read through their $refs, as the suite reads them.
const doc = (await dereferenced(
  (
    await client.send({ method: 'GET', host: OPERATOR_HOST, path: '/api/v1/openapi.json' })
  ).json,
)) as never;
const operations: Operation[] = readOperations(doc, (p) => app.services.registry.isOperatorPermission(p));
const lines: string[] = [];
for (const op of operations) {
  // Signing out would end the session every other target uses.
  if (op.id === 'auth-session-logout') continue;
  const tenant = op.operator ? operator : a;
  const req = validRequest(op, world, tenant, op.access === 'public' ? undefined : tenant.admin.cookie);
  const base = {
    operationId: op.id,
    method: op.method,
    host: req.host,
    cookie: req.cookie ?? '',
    url: `http://127.0.0.1:${port}${req.path}`,
  };
  const query = new URL(base.url).searchParams;
  for (const p of op.params.filter((x) => x.in === 'query')) {
    const url = new URL(base.url);
    if (!query.has(p.name)) url.searchParams.set(p.name, p.name === 'after' ? 'abc' : '1');
    lines.push(
      JSON.stringify({
        ...base,
        url: url.toString(),
        param: p.name,
        data: req.json === undefined ? undefined : JSON.stringify(req.json),
      }),
    );
  }
  for (const p of op.params.filter((x) => x.in === 'path')) {
    // sqlmap's custom injection marker (*) after the path parameter's value.
    const value = encodeURIComponent(
      String(req.path.split('?')[0]!.split('/')[op.path.split('/').indexOf(`{${p.name}}`)]),
    );
    const marked = base.url.replace(`/${value}`, `/${value}*`);
    lines.push(
      JSON.stringify({
        ...base,
        url: marked,
        param: `{${p.name}}`,
        data: req.json === undefined ? undefined : JSON.stringify(req.json),
      }),
    );
  }
  if (req.json && typeof req.json === 'object') {
    for (const field of Object.keys(req.json as object))
      lines.push(JSON.stringify({ ...base, param: field, data: JSON.stringify(req.json) }));
  }
}
writeFileSync(join(dir, 'targets.jsonl'), `${lines.join('\n')}\n`);
writeFileSync(join(dir, 'ready'), `${operations.length} operations, ${lines.length} injection points, port ${port}\n`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  client.close();
  await app.close();
  await embedded.stop();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
