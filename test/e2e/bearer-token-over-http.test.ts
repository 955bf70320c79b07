import { afterAll, beforeAll, expect, it } from 'vitest';
import { request } from 'node:http';
import type { ChildProcess } from 'node:child_process';
import { startService, stopService } from './processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { createCustomer, signInAs, startTestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';

/**
 * Issue 33's acceptance for personal access tokens, from outside: the service started as
 * `npm run start:web` starts it, a program that made a token over HTTP with its session and then
 * calls the API with `Authorization: Bearer` alone: its tenant's tasks are listed, another host
 * answers 401, and an operation beyond the token's permissions 403.
 */

const SITE = 'bearer.localhost';
const OTHER = 'elsewhere.localhost';

let service: { child: ChildProcess; url: string };
let cookie: string;

beforeAll(async () => {
  const databaseUrl = await createTestDatabase();
  // Migrations, two tenants and a signed-in user through an in-process app, closed before the service starts.
  const setup = await startTestApp({ databaseUrl, modules: allModules });
  const site = await createCustomer(setup, 'bearer', SITE);
  await createCustomer(setup, 'elsewhere', OTHER);
  cookie = (await signInAs(setup, site, ['task:read', 'task:update'])).cookie;
  await setup.close();
  service = await startService(
    {
      TENANTRY_DATABASE_URL: databaseUrl,
      TENANTRY_DATABASE_POOL_SIZE: '4',
      TENANTRY_SERVER_PORT: '0',
      TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
    },
    60_000,
    'web',
  );
}, 90_000);

afterAll(async () => {
  if (service) await stopService(service.child);
});

function send(
  method: string,
  host: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const { hostname, port } = new URL(service.url);
  const text = body === undefined ? '' : JSON.stringify(body);
  const sized =
    body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) };
  return new Promise((resolve, reject) => {
    const req = request(
      { hostname, port, method, path, agent: false, headers: { host, ...sized, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString() || 'null') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

it('a bearer token lists tasks on its tenant, answers 401 on another host and 403 beyond its permissions', async () => {
  const made = await send(
    'POST',
    SITE,
    '/api/v1/auth/tokens',
    { cookie },
    { name: 'reporting script', permissions: ['task:read'] },
  );
  expect(made.status, JSON.stringify(made.json)).toBe(201);
  const authorization = `Bearer ${String(made.json.token)}`;

  const listed = await send('GET', SITE, '/api/v1/task/tasks', { authorization });
  expect(listed.status, JSON.stringify(listed.json)).toBe(200);
  expect(Array.isArray(listed.json.items)).toBe(true);

  const elsewhere = await send('GET', OTHER, '/api/v1/task/tasks', { authorization });
  expect(elsewhere.status).toBe(401);
  expect(elsewhere.json.code).toBe('TOKEN_INVALID');

  // The user may create tasks; the token was given task:read only.
  const beyond = await send(
    'POST',
    SITE,
    '/api/v1/task/tasks',
    { authorization },
    { title: 'by token', priority: 'high', deadline: new Date(Date.now() + 86_400_000).toISOString() },
  );
  expect(beyond.status).toBe(403);
  expect(beyond.json.code).toBe('AUTH_FORBIDDEN');
}, 30_000);
