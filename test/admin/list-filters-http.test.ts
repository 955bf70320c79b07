import { beforeAll, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../helpers/app.ts';

/**
 * Issue 44, point 9, over HTTP: the admin list's filter controls are a plain GET form built from
 * the list's filterable fields (labels for people, no field keys or codes), whose values are the
 * API's query parameters; what a form cannot write in that syntax (from and to, a picker's bare
 * id, an empty choice) is written back by one redirect, so the address is the API's query and can
 * be shared; filters, q and sort survive paging; the entity's preset is one link.
 */

const t = useTestApp({ customers: ['acme'] });
const HOST = 'acme.localhost';
const LIST = '/admin/task/tasks';
const HOUR = 3_600_000;

let admin: SignedIn;
let ann: SignedIn;
const ids: Record<string, string> = {};

const at = (hours: number) => new Date(Date.now() + hours * HOUR);

/** What a person reads of a page: its text, without tags, attributes, scripts or styles. */
const visibleText = (html: string) =>
  html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ');

const get = (path: string, headers: Record<string, string> = {}) =>
  t.app.http(HOST).get(path).set('Cookie', admin.cookie).set(headers);

beforeAll(async () => {
  admin = await signInAs(t.app, t.acme, ['*'], { email: 'admin@filters.test' });
  ann = await signInAs(t.app, t.acme, ['task:read'], { email: 'ann@filters.test' });
  const tasks = [
    ['Late open high', 'open', 'high', -2, ann.userId],
    ['Late acknowledged low', 'acknowledged', 'low', -30, null],
    ['Late resolved high', 'resolved', 'high', -5, ann.userId],
    ['Later open critical', 'open', 'critical', 48, null],
    ['Later in progress high', 'in_progress', 'high', 72, ann.userId],
  ] as const;
  await t.app.services.transactions.run(t.acme, async (ctx) => {
    for (const [title, status, priority, hours, assignee] of tasks) {
      const { rows } = await ctx.db.executeQuery<{ id: string }>(
        CompiledQuery.raw(
          'insert into tasks (title, status, priority, deadline, assignee_id) values ($1, $2, $3, $4, $5) returning id',
          [title, status, priority, at(hours), assignee],
        ),
      );
      ids[title] = rows[0]!.id;
    }
  });
});

describe('the task list page offers filter controls from its filterable fields', () => {
  it('shows status, priority, due (from and to), assignee and the missed due date, in words, above the rows', async () => {
    const res = await get(LIST).expect(200);
    const html = res.text;
    expect(html).toMatch(/<form method="get" action="\/admin\/task\/tasks" class="list-filters" role="search"/);
    expect(html).toContain('hx-get="/admin/task/tasks/rows"');
    expect(html).toMatch(/<label for="filter-status">Status<\/label>/);
    expect(html).toMatch(/<option value="eq.in_progress">In progress<\/option>/);
    expect(html).toMatch(/<label for="filter-priority">Priority<\/label>/);
    expect(html).toMatch(/<option value="eq.critical">Critical<\/option>/);
    expect(html).toMatch(/<legend>Due<\/legend>/);
    expect(html).toMatch(/<input type="datetime-local" id="filter-deadline-from" name="deadline-from" value="">/);
    expect(html).toMatch(/<input type="datetime-local" id="filter-deadline-to" name="deadline-to" value="">/);
    expect(html).toMatch(/<label for="filter-assigneeId">Assigned to<\/label>/);
    expect(html).toContain(`<option value="${ann.userId}">ann@filters.test</option>`);
    expect(html).toMatch(/<option value="is.null">Nobody<\/option>/);
    expect(html).toMatch(/<label for="filter-slaBreached">Missed its due date<\/label>/);
    expect(html).toMatch(/<option value="is.true">Yes<\/option>/);
    // The controls stand before the rows.
    expect(html.indexOf('class="list-filters"')).toBeLessThan(html.indexOf('id="rows"'));
    // Text for people: no field keys, no operators.
    const text = visibleText(html);
    for (const code of ['assigneeId', 'slaBreached', 'in_progress', 'eq.', 'is.null', 'deadline'])
      expect(text).not.toContain(code);
  });

  it('filters by the API parameters in its address, the controls showing them chosen', async () => {
    const res = await get(`${LIST}?status=eq.open&priority=eq.high`).expect(200);
    expect(res.text).toContain('Late open high');
    for (const other of [
      'Late acknowledged low',
      'Later open critical',
      'Later in progress high',
      'Late resolved high',
    ])
      expect(res.text).not.toContain(other);
    expect(res.text).toMatch(/<option value="eq.open" selected>Open<\/option>/);
    expect(res.text).toMatch(/<option value="eq.high" selected>High<\/option>/);
    // The whole list is one link away.
    expect(res.text).toMatch(/<a href="\/admin\/task\/tasks">Show all<\/a>/);
  });

  it('filters by the assignee and the missed due date through the same parameters', async () => {
    const mine = await get(`${LIST}?assigneeId=eq.${ann.userId}`).expect(200);
    expect(mine.text).toContain('Late open high');
    expect(mine.text).toContain('Later in progress high');
    expect(mine.text).not.toContain('Later open critical');
    expect(mine.text).toContain(`<option value="${ann.userId}" selected>ann@filters.test</option>`);
    const nobody = await get(`${LIST}?assigneeId=is.null`).expect(200);
    expect(nobody.text).toContain('Later open critical');
    expect(nobody.text).not.toContain('Late open high');
    const none = await get(`${LIST}?slaBreached=is.true&priority=eq.low&status=eq.closed`).expect(200);
    expect(none.text).toContain('No tasks match these filters.');
  });
});

describe('a submitted form is written back to the API parameters', () => {
  it('without JavaScript: 303 to the list address in the API syntax (from, to, bare id, empty choices)', async () => {
    const res = await get(
      `${LIST}?q=&status=eq.open&priority=&deadline-from=2020-01-01T09:30&deadline-to=&assigneeId=${ann.userId}&slaBreached=&sort=title`,
    );
    expect(res.status).toBe(303);
    const location = new URL(res.headers.location!, 'http://x');
    expect(location.pathname).toBe(LIST);
    expect([...location.searchParams]).toEqual([
      ['status', 'eq.open'],
      ['deadline', 'gte.2020-01-01T09:30:00Z'],
      ['assigneeId', `eq.${ann.userId}`],
      ['sort', 'title'],
    ]);
    // The address it leads to is a list query, and the form shows it back.
    const page = await get(res.headers.location!).expect(200);
    expect(page.text).toContain('Late open high');
    expect(page.text).not.toContain('Later open critical');
    expect(page.text).toMatch(/name="deadline-from" value="2020-01-01T09:30"/);
    expect(page.text).toMatch(/<input type="hidden" name="sort" value="title">/);
  });

  it('through htmx: the rows alone, and the list address in the API syntax pushed', async () => {
    const res = await get(`${LIST}/rows?q=&status=&priority=eq.high&deadline-from=&deadline-to=2099-01-01T00:00`, {
      'HX-Request': 'true',
    }).expect(200);
    expect(res.headers['hx-push-url']).toBe(`${LIST}?priority=eq.high&deadline=lte.2099-01-01T00%3A00%3A00Z`);
    expect(res.text).not.toContain('<form');
    expect(res.text).toContain('Late open high');
    expect(res.text).not.toContain('Later open critical');
  });

  it('a value the list refuses is the API refusal in words, with no code shown', async () => {
    const res = await get(`${LIST}?priority=gte.urgent`);
    expect(res.status).toBe(422);
    expect(res.text).toContain('data-code="VALIDATION_FAILED"');
    expect(visibleText(res.text)).not.toContain('VALIDATION_FAILED');
  });
});

describe('filters, q and sort survive paging and sorting', () => {
  it('keeps them in the next page and the sort links', async () => {
    const res = await get(`${LIST}?priority=eq.high&q=late&sort=title&limit=1`).expect(200);
    expect(res.text).toContain('Late open high');
    expect(res.text).not.toContain('Late resolved high');
    const next = /<a rel="next" href="([^"]+)"/.exec(res.text)?.[1]?.replaceAll('&amp;', '&');
    expect(next).toBe(`${LIST}?sort=title&limit=1&q=late&priority=eq.high&offset=1`);
    const second = await get(next!).expect(200);
    expect(second.text).toContain('Late resolved high');
    expect(second.text).not.toContain('Later in progress high');
    // The status column's sort link keeps the filter and the search.
    expect(res.text).toContain('href="/admin/task/tasks?sort=status&amp;limit=1&amp;q=late&amp;priority=eq.high"');
  });
});

describe('the declared preset: "Overdue and not resolved" in two clicks', () => {
  it('is a link on the list whose address is the preset query; the page shows it chosen', async () => {
    const list = await get(LIST).expect(200);
    const href = /<a class="button button-quiet" href="([^"]+)">Overdue and not resolved<\/a>/
      .exec(list.text)?.[1]
      ?.replaceAll('&amp;', '&');
    expect(href).toBe(`${LIST}?deadline=lt.now&status=not.in.%28resolved%2Cclosed%29&sort=deadline`);
    const res = await get(href!).expect(200);
    // The overdue tasks still to do, the most overdue first; not the resolved one, not the later ones.
    const shown = ['Late acknowledged low', 'Late open high'].map((title) => res.text.indexOf(title));
    expect(shown.every((at) => at > 0)).toBe(true);
    expect(shown[0]).toBeLessThan(shown[1]!);
    for (const other of ['Late resolved high', 'Later open critical', 'Later in progress high'])
      expect(res.text).not.toContain(other);
    expect(res.text).toMatch(/href="[^"]+" aria-current="true">Overdue and not resolved<\/a>/);
    // The status control shows the preset's condition as the statuses it lets through.
    expect(res.text).toContain(
      '<option value="not.in.(resolved,closed)" selected>Open, Acknowledged or In progress</option>',
    );
    // What no control shows is kept, in words, as a ticked box of its parameter.
    expect(res.text).toMatch(
      /<input type="checkbox" id="filter-kept-1" name="deadline" value="lt.now" checked> <label for="filter-kept-1">Due: before now<\/label>/,
    );
  });
});
