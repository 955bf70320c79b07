import { createHash, randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { notify } from '../../modules/notification/notify.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../helpers/app.ts';

/**
 * Issue 48, point 7: every hand-written list page whose API list exports has "Download CSV" for
 * its current filters: the link is the API list's export (?format=csv) with the page's filters,
 * search and sort, and it downloads exactly the rows the page's filters match.
 */

const t = useTestApp({ customers: ['acme'] });
const HOST = 'acme.localhost';
let admin: SignedIn;

/** The page's "Download CSV" address, as the browser follows it (the HTML's &amp; read back). */
function downloadHref(html: string): URL {
  const href =
    /<a class="button button-quiet" href="([^"]+)" download data-action="download-csv">Download CSV<\/a>/.exec(
      html,
    )?.[1];
  expect(href, 'the page has no Download CSV').toBeDefined();
  return new URL(href!.replaceAll('&amp;', '&'), 'http://acme.localhost');
}

/** Follows the link with the same session: the CSV's records after its header. */
async function download(url: URL, cookie: string, host = HOST): Promise<string[]> {
  const res = await t.app.http(host).get(`${url.pathname}${url.search}`).set('Cookie', cookie);
  expect(res.status, res.text).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/csv/);
  expect(res.headers['content-disposition']).toMatch(/^attachment; filename=/);
  return res.text.trimEnd().split('\r\n').slice(1);
}

const page = (path: string, cookie = admin.cookie, host = HOST) =>
  t.app.http(host).get(path).set('Cookie', cookie).expect(200);

beforeAll(async () => {
  admin = await signInAs(t.app, t.acme, ['*'], { email: 'admin@download.test' });
});

describe('Download CSV on the hand-written list pages', () => {
  it('files: the export of the filtered files', async () => {
    await t.app.services.transactions.run(t.acme, async (ctx) => {
      for (const [name, visibility] of [
        ['public-price-list.txt', 'public'],
        ['private-notes.txt', 'private'],
      ] as const) {
        await ctx.db.executeQuery(
          CompiledQuery.raw(
            `insert into files (storage_key, name, size, sha256, media_type, visibility, uploaded_by)
             values ($1, $2, 10, $3, 'text/plain', $4, $5)`,
            [randomUUID(), name, createHash('sha256').update(name).digest('hex'), visibility, admin.userId],
          ),
        );
      }
    });
    const url = downloadHref((await page('/admin/file/files?visibility=eq.public')).text);
    expect(url.pathname).toBe('/api/v1/file/files');
    expect(url.searchParams.get('visibility')).toBe('eq.public');
    expect(url.searchParams.get('format')).toBe('csv');
    const rows = await download(url, admin.cookie);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('public-price-list.txt');
  });

  it('notifications: the export of the unread ones', async () => {
    await t.app.services.transactions.run(t.acme, async (tx) => {
      for (const title of ['Unread one', 'Read one'])
        await notify(tx, { recipientId: admin.userId, title, body: title, link: '/admin', email: false });
      await tx.db.executeQuery(CompiledQuery.raw(`update notifications set read_at = now() where title = 'Read one'`));
    });
    const url = downloadHref((await page('/admin/notification/notifications?readAt=is.null')).text);
    expect(url.pathname).toBe('/api/v1/notification/notifications');
    expect(url.searchParams.get('readAt')).toBe('is.null');
    const rows = await download(url, admin.cookie);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('Unread one');
  });

  it('access tokens: the export of the ones still valid, without their secrets', async () => {
    const made = await t.app
      .http(HOST)
      .post('/api/v1/auth/tokens')
      .set('Cookie', admin.cookie)
      .send({ name: 'Nightly export', expiresInDays: 30, permissions: ['task:read'] })
      .expect(201);
    const url = downloadHref((await page('/admin/auth/tokens?expiresAt=gt.now')).text);
    expect(url.pathname).toBe('/api/v1/auth/tokens');
    expect(url.searchParams.get('expiresAt')).toBe('gt.now');
    const rows = await download(url, admin.cookie);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('Nightly export');
    expect(rows.join('\n')).not.toContain(made.body.token);
    const none = downloadHref((await page('/admin/auth/tokens?expiresAt=lte.now')).text);
    expect(await download(none, admin.cookie)).toEqual([]);
  });

  it('roles: the export of every role, in the page order', async () => {
    const url = downloadHref((await page('/admin/auth/roles')).text);
    expect(url.pathname).toBe('/api/v1/auth/roles');
    const rows = await download(url, admin.cookie);
    const listed = await t.app.http(HOST).get('/api/v1/auth/roles?limit=100').set('Cookie', admin.cookie).expect(200);
    expect(listed.body.items.length).toBeGreaterThan(0);
    expect(rows).toHaveLength(listed.body.items.length);
  });

  it('webhook deliveries: the export of the failed ones', async () => {
    const url = downloadHref((await page('/admin/webhook/deliveries?status=in.(failed,dead)')).text);
    expect(url.pathname).toBe('/api/v1/webhook/deliveries');
    expect(url.searchParams.get('status')).toBe('in.(failed,dead)');
    expect(await download(url, admin.cookie)).toEqual([]);
  });

  it("activity: the export of the page's filters in the API's query language", async () => {
    const url = downloadHref(
      (await page(`/admin/audit/activity?person=${admin.userId}&kind=auth.token_created&from=2026-01-01&to=2026-12-31`))
        .text,
    );
    expect(url.pathname).toBe('/api/v1/audit/activity');
    expect(url.searchParams.get('actor.userId')).toBe(`eq.${admin.userId}`);
    expect(url.searchParams.get('event')).toBe('in.(auth.token_created)');
    expect(url.searchParams.getAll('at')).toEqual(['gte.2026-01-01T00:00:00.000Z', 'lt.2027-01-01T00:00:00.000Z']);
    // The API takes the query as written (a refused filter would be a problem, not a CSV).
    await download(url, admin.cookie);
  });

  it("tenants: the operator's export of the searched and filtered tenants", async () => {
    const operator = await signInAs(t.app, t.app.operator, ['tenant:manage']);
    const html = (
      await t.app.http().get('/admin/tenant/tenants?status=eq.active&q=acme').set('Cookie', operator.cookie)
    ).text;
    const url = downloadHref(html);
    expect(url.pathname).toBe('/api/v1/tenant/tenants');
    expect(url.searchParams.get('status')).toBe('eq.active');
    expect(url.searchParams.get('q')).toBe('acme');
    const res = await t.app.http().get(`${url.pathname}${url.search}`).set('Cookie', operator.cookie);
    expect(res.status, res.text).toBe(200);
    const rows = res.text.trimEnd().split('\r\n').slice(1);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toContain('acme');
  });
});
