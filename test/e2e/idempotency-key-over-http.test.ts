import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { startService, stopService } from './processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { createCustomer, signInAs, startTestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';

/**
 * Issue 33's acceptance, from outside: the service started as `npm run start:web` starts it, a
 * client retrying a create over HTTP with the same Idempotency-Key, and the database counting
 * the tasks.
 */

const SITE = 'retry.localhost';

let service: { child: ChildProcess; url: string };
let databaseUrl: string;
let cookie: string;

beforeAll(async () => {
  databaseUrl = await createTestDatabase();
  // Migrations, the tenant and a signed-in user through an in-process app, closed before the service starts.
  const setup = await startTestApp({ databaseUrl, modules: allModules });
  const site = await createCustomer(setup, 'retry', SITE);
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

function post(
  path: string,
  body: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const { hostname, port } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname,
        port,
        method: 'POST',
        path,
        agent: false,
        headers: {
          host: SITE,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

it('a create sent three times with one Idempotency-Key makes one task; every answer is the first', async () => {
  const title = `retried ${randomUUID()}`;
  const body = JSON.stringify({ title, priority: 'high', deadline: new Date(Date.now() + 86400_000).toISOString() });
  const key = randomUUID();
  const answers = [];
  for (let i = 0; i < 3; i++) answers.push(await post('/api/v1/task/tasks', body, { cookie, 'idempotency-key': key }));
  for (const answer of answers) {
    expect(answer.status, answer.body).toBe(201);
    expect(answer.body).toBe(answers[0]!.body);
  }
  expect(answers.map((a) => a.headers['idempotent-replayed'])).toEqual([undefined, 'true', 'true']);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from tasks where title = $1', [title]);
    expect(rows[0]!.n).toBe(1);
  } finally {
    await db.end();
  }
}, 30_000);
