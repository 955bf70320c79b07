import { expect } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';

export const CONTENTS = '/api/v1/content/contents';
export const PUBLIC = '/api/v1/content/public';

export interface ContentSite {
  app: TestApp;
  tenant: TenantRef;
  host: string;
  /** A caller holding content:read and content:manage. */
  cookie: string;
  userId: string;
}

/** An app with one customer tenant at `<slug>.localhost` and a content manager signed in there. */
export async function contentSite(
  slug: string,
  options: Parameters<typeof startTestApp>[0] = {},
): Promise<ContentSite> {
  const app = await startTestApp(options);
  const host = `${slug}.localhost`;
  const tenant = await createCustomer(app, slug, host);
  const signedIn = await signInAs(app, tenant, ['content:read', 'content:manage']);
  return { app, tenant, host, cookie: signedIn.cookie, userId: signedIn.userId };
}

let counter = 0;
export const uniqueSlug = (prefix = 'page') => `${prefix}-${Date.now().toString(36)}-${++counter}`;

export async function createContent(
  site: ContentSite,
  values: Record<string, unknown> = {},
): Promise<Record<string, unknown> & { id: string; slug: string }> {
  const res = await site.app
    .http(site.host)
    .post(CONTENTS)
    .set('Cookie', site.cookie)
    .send({ slug: uniqueSlug(), title: 'A title', kind: 'page', body: '# Hello\n\nSome *text*.', ...values });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export const command = (site: ContentSite, id: string, name: 'publish' | 'unpublish' | 'archive') =>
  site.app.http(site.host).post(`${CONTENTS}/${id}/${name}`).set('Cookie', site.cookie);

/** The row as stored, and the outbox events of the tenant, for "no write, no event" checks. */
export async function storedRow(site: ContentSite, id: string): Promise<Record<string, unknown>> {
  const { rows } = await site.app.services.db.pool.query('select * from contents where id = $1', [id]);
  return rows[0];
}

export async function outbox(site: ContentSite): Promise<{ name: string; payload: Record<string, unknown> }[]> {
  const { rows } = await site.app.services.db.pool.query(
    'select name, payload from outbox where tenant_id = $1 order by id',
    [site.tenant.id],
  );
  return rows;
}
