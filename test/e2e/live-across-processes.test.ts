import { afterAll, beforeAll, expect, it } from 'vitest';
import { request } from 'node:http';
import type { ChildProcess } from 'node:child_process';
import { startService, stopService } from './processes.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { createCustomer, signInAs, startTestApp } from '../helpers/app.ts';
import { allModules } from '../../modules/index.ts';
import { StreamClient } from '../helpers/event-stream.ts';

/**
 * Issue 45 across processes: two web processes and a worker on one database, as deployed. A task
 * created through one web process reaches the streams open on both (the worker's relay NOTIFYs
 * every web process); a web process that shuts down ends its streams cleanly, and its client
 * resumes on the other with Last-Event-ID, missing nothing.
 */
const SITE = 'live-e2e.localhost';
const TASKS = '/api/v1/task/tasks';

type Service = { child: ChildProcess; url: string };
let web1: Service;
let web2: Service;
let worker: Service;
let cookie: string;
const clients: StreamClient[] = [];

beforeAll(async () => {
  const databaseUrl = await createTestDatabase();
  const setup = await startTestApp({ databaseUrl, modules: allModules });
  const site = await createCustomer(setup, 'live-e2e', SITE);
  cookie = (await signInAs(setup, site, ['task:read', 'task:update'])).cookie;
  await setup.close();
  const settings = {
    TENANTRY_DATABASE_URL: databaseUrl,
    TENANTRY_DATABASE_POOL_SIZE: '4',
    TENANTRY_SERVER_PORT: '0',
    TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost',
  };
  [web1, web2, worker] = await Promise.all([
    startService(settings, 90_000, 'web'),
    startService(settings, 90_000, 'web'),
    startService(settings, 90_000, 'worker'),
  ]);
}, 150_000);

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all([web1, web2, worker].filter(Boolean).map((s) => stopService(s.child)));
}, 60_000);

async function follow(service: Service, headers: Record<string, string> = {}): Promise<StreamClient> {
  const client = await StreamClient.open(service.url, `${TASKS}/stream`, { host: SITE, cookie, ...headers });
  clients.push(client);
  expect(client.status).toBe(200);
  return client;
}

function create(service: Service, title: string): Promise<string> {
  const { hostname, port } = new URL(service.url);
  const body = JSON.stringify({ title, priority: 'low', deadline: '2031-01-01T00:00:00Z' });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname,
        port,
        method: 'POST',
        path: TASKS,
        agent: false,
        headers: {
          host: SITE,
          cookie,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
        });
        res.on('end', () => (res.statusCode === 201 ? resolve(JSON.parse(text).id) : reject(new Error(text))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const ids = (events: { data: string }[]) => events.map((e) => JSON.parse(e.data).id as string);

it('a change committed through one web process reaches the streams of both', async () => {
  const on1 = await follow(web1);
  const on2 = await follow(web2);
  const id = await create(web1, 'Seen everywhere');
  expect(ids(await on1.take(1, 15_000))).toEqual([id]);
  expect(ids(await on2.take(1, 15_000))).toEqual([id]);
}, 60_000);

it('a web process that stops ends its streams cleanly; the client resumes on the other with nothing lost', async () => {
  const client = await follow(web1);
  const first = await create(web2, 'Before the stop');
  const [seen] = await client.take(1, 15_000);
  expect(JSON.parse(seen!.data).id).toBe(first);
  await stopService(web1.child);
  // The answer ended without an end event: the client is to reconnect.
  expect(await client.waitEnd(5000)).toBe(true);
  expect(await client.next(100)).toBeUndefined();
  const missed = await create(web2, 'While reconnecting');
  const resumed = await follow(web2, { 'last-event-id': seen!.id! });
  expect(ids(await resumed.take(1, 15_000))).toEqual([missed]);
}, 90_000);
