import { afterAll, beforeAll, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { LookupFunction } from 'node:net';
import createClient from 'openapi-fetch';
import type { paths } from '../../client/schema.d.ts';
import { allModules } from '../../modules/index.ts';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import { addUser } from '../modules/auth/fixtures.ts';

/**
 * Issue 33, point 4: a program drives a full scenario through openapi-fetch and the generated
 * client/schema.d.ts, over a real socket. `npm run check` type-checks this file against the
 * schema, so an operation or field the client relies on that the document loses fails the check
 * before it fails here.
 */

let app: TestApp;
let base: string;
let user: { id: string; email: string; password: string };

// Every name is this machine (README, "A program reaching a tenant on *.localhost"): the URL keeps
// the tenant's host, so the Host header picks the tenant.
const loopback: LookupFunction = (_hostname, options, callback) =>
  options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);

/** A fetch over node:http with a cookie jar of one session cookie: what a small program would write. */
function programFetch() {
  let cookie: string | undefined;
  return async (input: Request): Promise<Response> => {
    const body = input.body ? Buffer.from(await input.arrayBuffer()) : undefined;
    const headers: Record<string, string> = Object.fromEntries(input.headers);
    if (cookie && !headers.authorization) headers.cookie = cookie;
    return new Promise((resolve, reject) => {
      const request = http.request(input.url, { method: input.method, headers, lookup: loopback }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const session = response.headers['set-cookie']?.find((line) => line.includes('app_session='));
          if (session) cookie = session.split(';', 1)[0];
          const answerHeaders = new Headers();
          for (const [name, value] of Object.entries(response.headers)) {
            for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value])
              answerHeaders.append(name, one);
          }
          const status = response.statusCode!;
          resolve(
            new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), {
              status,
              headers: answerHeaders,
            }),
          );
        });
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(body);
    });
  };
}

beforeAll(async () => {
  app = await startTestApp({ modules: allModules });
  const acme = await createCustomer(app, 'acme');
  user = await addUser(app, acme, { roles: ['admin'] });
  const address = await app.web!.listen({ host: '127.0.0.1', port: 0 });
  base = `http://acme.localhost:${new URL(address).port}`;
});

afterAll(async () => {
  await app?.close();
});

it('a program signs in, works a task through its commands, pages with the cursor, uploads a file and publishes content, then uses a personal access token', async () => {
  const client = createClient<paths, `${string}/json` | `${string}/${string}+json`>({
    baseUrl: base,
    fetch: programFetch(),
  });

  const signedIn = await client.POST('/api/v1/auth/login', { body: { email: user.email, password: user.password } });
  expect(signedIn.response.status, JSON.stringify(signedIn.error)).toBe(200);
  expect(signedIn.data?.email).toBe(user.email);

  const deadline = new Date(Date.now() + 86_400_000).toISOString();
  const created = await client.POST('/api/v1/task/tasks', {
    body: { title: 'Ship the client', priority: 'high', status: 'open', deadline },
  });
  expect(created.response.status, JSON.stringify(created.error)).toBe(201);
  const taskId = created.data!.id;

  const assigned = await client.POST('/api/v1/task/tasks/{id}/assign', {
    params: { path: { id: taskId } },
    body: { assigneeId: user.id },
  });
  expect(assigned.response.status, JSON.stringify(assigned.error)).toBe(200);
  expect(assigned.data?.assigneeId).toBe(user.id);
  const resolved = await client.POST('/api/v1/task/tasks/{id}/resolve', {
    params: { path: { id: taskId } },
    body: { resolution: 'done by a program' },
  });
  expect(resolved.response.status, JSON.stringify(resolved.error)).toBe(200);
  expect(resolved.data?.status).toBe('resolved');

  for (const title of ['second', 'third']) {
    const more = await client.POST('/api/v1/task/tasks', {
      body: { title, priority: 'low', status: 'open', deadline },
    });
    expect(more.response.status).toBe(201);
  }
  const firstPage = await client.GET('/api/v1/task/tasks', { params: { query: { limit: 2, sort: 'title' } } });
  expect(firstPage.data?.items.map((t) => t.title)).toEqual(['second', 'Ship the client'].sort());
  expect(firstPage.data?.next).toEqual(expect.any(String));
  const secondPage = await client.GET('/api/v1/task/tasks', {
    params: { query: { limit: 2, sort: 'title', after: firstPage.data!.next! } },
  });
  expect(secondPage.data?.items.map((t) => t.title)).toEqual(['third']);
  expect(secondPage.data?.next).toBeNull();

  // A question (issue 44): the finished tasks assigned to this user, due within two days (a
  // repeated parameter holds twice), with the assignee's address and nothing else.
  const asked = await client.GET('/api/v1/task/tasks', {
    params: {
      query: {
        status: 'in.(resolved,closed)',
        deadline: ['gt.now', 'lte.now+2d'],
        'assignee.email': `eq.${user.email}`,
        expand: 'assignee',
        fields: 'title,assignee.email',
        sort: '-priority,deadline',
      },
    },
  });
  expect(asked.response.status, JSON.stringify(asked.error)).toBe(200);
  expect(asked.data?.items).toEqual([
    { id: taskId, title: 'Ship the client', assignee: { id: user.id, email: user.email } },
  ]);
  const notAnOperator = await client.GET('/api/v1/task/tasks', { params: { query: { priority: 'like.high' } } });
  expect(notAnOperator.response.status).toBe(422);
  expect(notAnOperator.error?.errors?.[0]?.message).toMatch(/priority takes eq, neq, gt, gte, lt, lte, in/);

  const uploaded = await client.POST('/api/v1/file/files', {
    params: { query: { visibility: 'private' } },
    body: { file: new Blob(['hello from a program'], { type: 'text/plain' }) },
    bodySerializer: (body) => {
      const form = new FormData();
      form.append('file', body.file, 'hello.txt');
      return form;
    },
  });
  expect(uploaded.response.status, JSON.stringify(uploaded.error)).toBe(201);
  expect(uploaded.data).toMatchObject({ name: 'hello.txt', size: 20 });
  const downloaded = await client.GET('/api/v1/file/files/{id}/content', {
    params: { path: { id: uploaded.data!.id } },
    parseAs: 'text',
  });
  expect(downloaded.data).toBe('hello from a program');

  const slug = `typed-${randomUUID().slice(0, 8)}`;
  const content = await client.POST('/api/v1/content/contents', {
    body: { kind: 'page', slug, title: 'Typed', body: '# Typed\n\nFrom a program.' },
  });
  expect(content.response.status, JSON.stringify(content.error)).toBe(201);
  const published = await client.POST('/api/v1/content/contents/{id}/publish', {
    params: { path: { id: content.data!.id } },
  });
  expect(published.response.status, JSON.stringify(published.error)).toBe(200);
  const anonymous = createClient<paths, `${string}/json` | `${string}/${string}+json`>({
    baseUrl: base,
    fetch: programFetch(),
  });
  const page = await anonymous.GET('/api/v1/content/public/{slug}', { params: { path: { slug } } });
  expect(page.response.status).toBe(200);
  expect(page.data?.title).toBe('Typed');

  // A refusal arrives as the typed problem document.
  const refused = await anonymous.GET('/api/v1/task/tasks');
  expect(refused.response.status).toBe(401);
  expect(refused.error?.code).toEqual(expect.any(String));

  // A personal access token: made with the session, then the only credential of a second client.
  const issued = await client.POST('/api/v1/auth/tokens', {
    body: { name: 'typed client', permissions: ['task:read'], expiresInDays: 7 },
  });
  expect(issued.response.status, JSON.stringify(issued.error)).toBe(201);
  const bearer = createClient<paths, `${string}/json` | `${string}/${string}+json`>({
    baseUrl: base,
    fetch: programFetch(),
    headers: { authorization: `Bearer ${issued.data!.token}` },
  });
  const listed = await bearer.GET('/api/v1/task/tasks', { params: { query: { limit: 10 } } });
  expect(listed.response.status, JSON.stringify(listed.error)).toBe(200);
  expect(listed.data?.items).toHaveLength(3);
  const beyond = await bearer.POST('/api/v1/task/tasks', {
    body: { title: 'not mine to make', priority: 'low', status: 'open', deadline },
  });
  expect(beyond.response.status).toBe(403);
}, 60_000);
