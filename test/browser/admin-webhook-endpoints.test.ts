import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Page, Response } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCustomer } from '../helpers/app.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import {
  hasChromium,
  seriousViolations,
  signedInSession,
  type SignedInSession,
  useBrowserApp,
  warnNoChromium,
} from './admin-pages-setup.ts';

// Issue 42, point 3: webhook endpoints in the shell. The new form starts at the API's defaults (the
// Active box ticked); the events are ticked from those the modules declare, grouped by module and
// read as words; the signing secret is shown once, on the page answering the form that made it
// (the create, and New signing secret), never in a URL, a cookie or a log, and never again.

warnNoChromium('test/browser/admin-webhook-endpoints.test.ts');

const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(String(chunk));
    done();
  },
});
// The most talkative level, so whatever any layer logs is searched for the secret.
const t = useBrowserApp({ logger: pino({ level: 'trace' }, sink) as FastifyBaseLogger });
const ACME = 'acme.localhost';
const PAGE = '/admin/webhook/endpoints';
const WIDTHS = [
  { name: 'desktop', width: 1280, height: 900 },
  { name: 'phone', width: 390, height: 844 },
];

let acme: TenantRef;
let admin: { id: string; email: string; password: string };
let asAdmin: SignedInSession;

const storedSecret = async (id: string) =>
  (await t.app.services.db.pool.query<{ secret: string }>('select secret from webhook_endpoints where id = $1', [id]))
    .rows[0]!.secret;

const storedEvents = async (id: string) =>
  (await t.app.services.db.pool.query<{ events: string[] }>('select events from webhook_endpoints where id = $1', [id]))
    .rows[0]!.events;

/** The checkbox group of the events: its groups' headings, and each box's value, words and state. */
async function eventBoxes(page: Page) {
  const group = page.locator('fieldset.field-choices', { has: page.locator('legend', { hasText: /^Events/ }) });
  return {
    headings: await group.locator('fieldset.choice-group > legend').allInnerTexts(),
    boxes: await group.locator('input[type=checkbox]').evaluateAll((inputs) => {
      // The project compiles without the DOM library: the one browser global used here, typed by hand.
      const { document } = globalThis as unknown as {
        document: { querySelector(selector: string): { textContent: string | null } | null };
      };
      return inputs.map((i) => ({
        value: i.getAttribute('value') ?? '',
        label: (document.querySelector(`label[for="${i.id}"]`)?.textContent ?? '').trim(),
        checked: (i as unknown as { checked: boolean }).checked,
      }));
    }),
  };
}

/** How far the page is wider than the window (0: nothing scrolls sideways). */
const sideways = (page: Page) =>
  page.evaluate(() => {
    const { document, innerWidth } = globalThis as unknown as {
      document: { documentElement: { scrollWidth: number } };
      innerWidth: number;
    };
    return Math.max(0, document.documentElement.scrollWidth - innerWidth);
  });

/** Submits the resource form and returns the answer to its post (a plain post: the page it leads to). */
async function submit(
  page: Page,
  button = '#resource-form .actions button[type=submit]:not([name])',
): Promise<Response> {
  const [answer] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url().startsWith(t.origin(ACME))),
    page.click(button),
  ]);
  await page.waitForLoadState();
  return answer;
}

describe.skipIf(!hasChromium)('webhook endpoints in the admin shell', () => {
  beforeAll(async () => {
    acme = await createCustomer(t.app, 'acme', ACME);
    admin = await addUser(t.app, acme, { roles: ['admin'], password: 'acme admin password' });
    asAdmin = await signedInSession(t.browser, t.origin(ACME), admin);
  });

  it.each(WIDTHS)(
    'the new form starts active, and offers the declared events as boxes grouped by module ($name)',
    async (size) => {
      const { context, page } = await asAdmin();
      context.setDefaultTimeout(10_000);
      try {
        await page.setViewportSize(size);
        await page.goto(`${t.origin(ACME)}${PAGE}/new`);
        expect(await page.isChecked('input[type=checkbox][name=active]')).toBe(true);
        expect(await page.locator('input[type=text][name=events]').count()).toBe(0);
        const { headings, boxes } = await eventBoxes(page);
        // "All events" first, then each module's events under its heading.
        expect(boxes[0]).toEqual({ value: '*', label: 'All events, also kinds added later', checked: false });
        expect(headings).toEqual(expect.arrayContaining(['Tasks', 'Pages and posts', 'Users', 'Files', 'Billing']));
        expect(boxes).toEqual(
          expect.arrayContaining([
            { value: 'task.task.created', label: 'Task created', checked: false },
            { value: 'task.resolved', label: 'Resolved', checked: false },
            { value: 'content.published', label: 'Published', checked: false },
          ]),
        );
        // Every box is an event the API accepts: "*" or a declared event.
        const declared = t.app.services.registry.events;
        expect(boxes.filter((b) => b.value !== '*' && !declared.has(b.value))).toEqual([]);
        expect(boxes.length).toBe(declared.size + 1);
        expect(await sideways(page)).toBe(0);
        // People read words: no event name shows.
        const shown = (await page.locator('main').textContent()) ?? '';
        expect(shown).not.toMatch(/\b(task\.task\.created|task\.resolved|content\.published)\b/);
        expect(await seriousViolations(page)).toEqual([]);
      } finally {
        await context.close();
      }
    },
  );

  it('creating shows the signing secret once, on the answer to the form, and never again', async () => {
    const { context, page } = await asAdmin();
    context.setDefaultTimeout(10_000);
    try {
      await page.goto(`${t.origin(ACME)}${PAGE}/new`);
      await page.fill('[name=url]', 'https://hooks.example.com/tenantry');
      await page.check('input[name=events][value="task.task.created"]');
      await page.check('input[name=events][value="task.resolved"]');
      const answer = await submit(page);
      expect(answer.status()).toBe(201);
      expect(answer.headers()['cache-control']).toBe('no-store');
      expect(answer.headers()['set-cookie']).toBeUndefined();

      // The answer is the endpoint's page, with the secret in a box to copy.
      const shown = await page.inputValue('input.secret-value');
      expect(shown).toMatch(/^whsec_/);
      expect(await page.locator('.secret-shown [role=status]').textContent()).toContain(
        'Copy the signing secret now: it will not be shown again.',
      );
      const id = (await page.locator('dl.values dd').first().textContent())!.trim();
      expect(await storedSecret(id)).toBe(shown);
      expect(page.url()).not.toContain(shown);
      expect(await seriousViolations(page)).toEqual([]);
      // On a phone the secret's box fits the screen (the page's long heading is the phone layout's to wrap).
      await page.setViewportSize({ width: 390, height: 844 });
      const box = (await page.locator('.secret-shown input.secret-value').boundingBox())!;
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      await page.setViewportSize({ width: 1280, height: 900 });

      // Made as the API would: active, with the ticked events.
      const read = await t.app
        .http(ACME)
        .get(`/api/v1/webhook/endpoints/${id}`)
        .set('Cookie', (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; '))
        .expect(200);
      expect(read.body).toMatchObject({
        active: true,
        events: ['task.task.created', 'task.resolved'],
        signingSecret: null,
      });
      expect(await page.locator('.secret-shown h2').textContent()).toBe('Your new signing secret');

      // The record's page, read again: no secret, and the events in words.
      await page.goto(`${t.origin(ACME)}${PAGE}/${id}`);
      expect(await page.locator('.secret-shown').count()).toBe(0);
      expect(await page.content()).not.toContain(shown);
      expect(await page.locator('main').textContent()).toContain('Task created, Resolved');
      await page.goto(`${t.origin(ACME)}${PAGE}`);
      expect(await page.locator('main').textContent()).toContain('Task created, Resolved');
      expect(await page.content()).not.toContain(shown);

      // The edit form ticks what the endpoint receives; a box unticked there is no longer sent to it.
      await page.goto(`${t.origin(ACME)}${PAGE}/${id}/edit`);
      const ticked = (await eventBoxes(page)).boxes.filter((b) => b.checked).map((b) => b.value);
      expect(ticked).toEqual(['task.task.created', 'task.resolved']);
      await page.uncheck('input[name=events][value="task.task.created"]');
      await Promise.all([
        page.waitForURL(`${t.origin(ACME)}${PAGE}/${id}`),
        page.click('#resource-form .actions button[type=submit]:not([name])'),
      ]);
      expect(await page.locator('main').textContent()).toContain('Resolved');
      expect((await storedEvents(id)).sort()).toEqual(['task.resolved']);

      // New signing secret: shown once on its answer too, and it is the one now stored.
      await page.goto(`${t.origin(ACME)}${PAGE}/${id}/rotate-secret`);
      const rotated = await submit(page);
      expect(rotated.status()).toBe(200);
      expect(rotated.headers()['cache-control']).toBe('no-store');
      const next = await page.inputValue('input.secret-value');
      expect(next).toMatch(/^whsec_/);
      expect(next).not.toBe(shown);
      expect(await storedSecret(id)).toBe(next);
      await page.goto(`${t.origin(ACME)}${PAGE}/${id}`);
      expect(await page.content()).not.toContain(next);

      // No log line carries either secret.
      expect(logLines.filter((line) => line.includes(shown) || line.includes(next))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('a post with no event ticked comes back with the reason beside the events, the ticks kept', async () => {
    const { context, page } = await asAdmin();
    context.setDefaultTimeout(10_000);
    try {
      await page.goto(`${t.origin(ACME)}${PAGE}/new`);
      await page.fill('[name=url]', 'https://hooks.example.com/none');
      const answer = await submit(page);
      expect(answer.status()).toBe(422);
      expect(await page.locator('#field-events-error').textContent()).toBe('Tick at least one kind of event.');
      expect(await page.isChecked('input[type=checkbox][name=active]')).toBe(true);
      expect(await seriousViolations(page)).toEqual([]);
      // Ticked now: accepted.
      await page.check('input[name=events][value="*"]');
      expect((await submit(page)).status()).toBe(201);
      expect(await page.inputValue('input.secret-value')).toMatch(/^whsec_/);
    } finally {
      await context.close();
    }
  });
});
