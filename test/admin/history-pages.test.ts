import { describe, expect, it } from 'vitest';
import { sessionFormToken } from '../../framework/access/form-token.ts';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { codeLikeText, readableText } from '../helpers/readable-text.ts';

// Issue 46, point 6: a record's History section, its Restore behind a confirmation, and the
// Activity page, in people's words.
const t = useTestApp({ role: 'all', startWorker: true, customers: ['shell'] });
const host = 'shell.localhost';
const TASKS = '/api/v1/task/tasks';
const PAGES = '/admin/task/tasks';

let admin: SignedIn | undefined;
const signedIn = async () => (admin ??= await signInAs(t.app, t.shell, ['*']));
const http = () => t.app.http(host);
const page = async (path: string) => {
  const res = await http()
    .get(path)
    .set('Cookie', (await signedIn()).cookie);
  expect(res.status, path).toBe(200);
  return res.text;
};
const words = (html: string) => readableText(html).join(' ').replace(/\s+/g, ' ');
/** The activity's table alone (the filters' choices name every kind of change). */
const table = (html: string) => words(html.slice(html.indexOf('<table'), html.indexOf('</table>')));

async function aTask(): Promise<string> {
  const cookie = (await signedIn()).cookie;
  const res = await http().post(TASKS).set('Cookie', cookie).send({
    title: 'Renew the certificate',
    priority: 'medium',
    deadline: '2031-12-01T09:00:00.000Z',
    description: 'Steps:\n\n1. Order it\n2. Install it\n3. Check the chain',
  });
  expect(res.status).toBe(201);
  const id = res.body.id as string;
  const patch = await http().patch(`${TASKS}/${id}`).set('Cookie', cookie).send({
    deadline: '2031-12-05T09:00:00.000Z',
    description: 'Steps:\n\n1. Order it\n2. Install it on both hosts\n3. Check the chain',
  });
  expect(patch.status).toBe(200);
  return id;
}

describe('a record’s History section', () => {
  it('says who changed what and when, in words: a date moved, a long text as its diff, no field keys', async () => {
    const id = await aTask();
    const html = await page(`${PAGES}/${id}`);
    expect(html).toContain('id="history-heading"');
    const text = words(html);
    expect(text).toContain('You changed it');
    expect(text).toContain('Due moved from 1 Dec 2031, 09:00 UTC to 5 Dec 2031, 09:00 UTC');
    expect(text).toContain('You created it');
    // The description changed by a line: shown as the line removed and the line added.
    expect(html).toMatch(/<del><span class="visually-hidden">Removed: <\/span>2\. Install it<\/del>/);
    expect(html).toMatch(/<ins><span class="visually-hidden">Added: <\/span>2\. Install it on both hosts<\/ins>/);
    expect(codeLikeText(html, t.app.services.registry.events)).toEqual([]);
    const section = html.slice(html.indexOf('<section class="history"'), html.indexOf('</section>'));
    expect(words(section)).not.toMatch(/\bdeadline\b|\bdescription\b|assigneeId|slaBreached/);
  });

  it('restores a version after a confirmation that works without JavaScript', async () => {
    const id = await aTask();
    const html = await page(`${PAGES}/${id}`);
    const restoreHref = /href="(\/admin\/task\/tasks\/[^"]+\/restore\?revision=[^"]+)"/.exec(html)?.[1];
    expect(restoreHref).toBeDefined();
    const href = restoreHref!.replaceAll('&amp;', '&');
    const confirm = await page(href);
    expect(words(confirm)).toContain('as it was after this change?');
    const action = /<form method="post" action="([^"]+)" class="confirm">/.exec(confirm)![1]!.replaceAll('&amp;', '&');
    const posted = await http()
      .post(action)
      .type('form')
      .set('Cookie', (await signedIn()).cookie)
      .send({ csrf: sessionFormToken((await signedIn()).rawSessionId) });
    expect(posted.status).toBe(303);
    expect(posted.headers.location).toBe(`${PAGES}/${id}`);
    const read = await http()
      .get(`${TASKS}/${id}`)
      .set('Cookie', (await signedIn()).cookie);
    expect(read.body.deadline).toBe('2031-12-01T09:00:00.000Z');
    expect(words(await page(`${PAGES}/${id}`))).toContain('You restored an earlier version');
  });

  it('shows the whole history a page at a time', async () => {
    const id = await aTask();
    const html = await page(`${PAGES}/${id}/history`);
    expect(words(html)).toContain('Changes, newest first');
    expect(codeLikeText(html, t.app.services.registry.events)).toEqual([]);
  });
});

describe('the Activity page', () => {
  it('lists what happened in words, filtered by person, kind of change and date; only with audit:read', async () => {
    const id = await aTask();
    const deadline = Date.now() + 15_000;
    let html = '';
    for (;;) {
      html = await page('/admin/audit/activity');
      if (html.includes(`${PAGES}/${id}`) || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const text = table(html);
    expect(text).toContain('Task: created');
    expect(text).toContain('Task: updated');
    expect(text).toContain('You');
    expect(codeLikeText(html, t.app.services.registry.events)).toEqual([]);
    // The sidebar offers it to an admin.
    expect(html).toMatch(/<a[^>]+href="\/admin\/audit\/activity"/);

    const byKind = await page('/admin/audit/activity?kind=task.task.created');
    expect(table(byKind)).toContain('Task: created');
    expect(table(byKind)).not.toContain('Task: updated');
    const other = await signInAs(t.app, t.shell, ['task:read', 'task:update']);
    const byPerson = await page(`/admin/audit/activity?person=${other.userId}`);
    expect(table(byPerson)).toContain('Nothing matches these filters.');
    const byDate = await page('/admin/audit/activity?from=2000-01-01&to=2000-01-02');
    expect(table(byDate)).toContain('Nothing matches these filters.');
    const today = new Date().toISOString().slice(0, 10);
    expect(table(await page(`/admin/audit/activity?from=${today}&to=${today}`))).toContain('Task: created');

    const refused = await http().get('/admin/audit/activity').set('Cookie', other.cookie);
    expect(refused.status).toBe(403);
  });
});
