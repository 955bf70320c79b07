import axe from 'axe-core';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { startTestApp, type TestApp, type TestAppOptions } from '../helpers/app.ts';

import { closeContexts, hasChromium, workerChromium } from '../helpers/chromium.ts';

export {
  CHROMIUM,
  CHROMIUM_ARGS,
  closeContexts,
  hasChromium,
  warnNoChromium,
  workerChromium,
} from '../helpers/chromium.ts';

/** Starts the app's server on a free port; returns the origin of a host on it. */
export async function listen(app: TestApp): Promise<(host: string) => string> {
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.web!.server.address() as AddressInfo;
  return (host) => `http://${host}:${port}`;
}

/** A browser test's app, listening on a free port, and Chromium; each readable once the set-up ran. */
export interface BrowserApp {
  readonly app: TestApp;
  readonly browser: Browser;
  /** The origin of a host on the app's port, e.g. `http://acme.localhost:41234`. */
  origin(host: string): string;
}

/**
 * The set-up every browser test shares, as useTestApp is for the others: before the tests (and
 * before the hooks registered after this call) starts the app with these options, listens on a
 * free port and takes the worker's Chromium (workerChromium: launched by the worker's first browser
 * file, shared by the files after it); after them closes the app and every browser context the file
 * left open, not the browser. Nothing starts without Chromium (the file's
 * describe.skipIf(!hasChromium) skips its tests). Call it first in the describe (or file).
 */
export function useBrowserApp(options: TestAppOptions = {}): BrowserApp {
  let app: TestApp | undefined;
  let browser: Browser | undefined;
  let origin: ((host: string) => string) | undefined;
  beforeAll(async () => {
    if (!hasChromium) return;
    app = await startTestApp(options);
    origin = await listen(app);
    browser = await workerChromium();
  }, 60_000);
  afterAll(async () => {
    if (browser) await closeContexts(browser);
    await app?.close();
  });
  const ready = <T>(value: T | undefined, name: string): T => {
    if (value === undefined)
      throw new Error(`useBrowserApp: ${name} is read before the set-up ran; read it inside a test or a later hook`);
    return value;
  };
  return {
    get app() {
      return ready(app, 'app');
    },
    get browser() {
      return ready(browser, 'browser');
    },
    origin: (host) => ready(origin, 'origin')(host),
  };
}

/**
 * Signs in through /admin/login as a person would (the form, posted without help), and lands on
 * the dashboard.
 */
export async function signInThroughLogin(
  browser: Browser,
  origin: string,
  person: { email: string; password: string },
  options: { javaScriptEnabled?: boolean } = {},
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ javaScriptEnabled: options.javaScriptEnabled ?? true });
  const page = await context.newPage();
  await page.goto(`${origin}/admin/login`);
  await page.fill('input[name=email]', person.email);
  await page.fill('input[name=password]', person.password);
  await Promise.all([page.waitForURL(`${origin}/admin`), page.click('main form button[type=submit]')]);
  expect(new URL(page.url()).pathname).toBe('/admin');
  return { context, page };
}

/** Opens a browser context on a session signed in once (signedInSession), its page on the dashboard. */
export type SignedInSession = (options?: BrowserContextOptions) => Promise<{ context: BrowserContext; page: Page }>;

/**
 * Signs the person in through /admin/login once (signInThroughLogin) and keeps that session: each
 * call of the function it answers opens a new browser context holding the session's cookie, its
 * page on the dashboard (checked to land there, as signInThroughLogin checks). For a file whose
 * tests need the person signed in but do not test signing in: one login a file, not one a test.
 */
export async function signedInSession(
  browser: Browser,
  origin: string,
  person: { email: string; password: string },
): Promise<SignedInSession> {
  const first = await signInThroughLogin(browser, origin, person);
  const storageState = await first.context.storageState();
  await first.context.close();
  return async (options = {}) => {
    const context = await browser.newContext({ ...options, storageState });
    const page = await context.newPage();
    await page.goto(`${origin}/admin`);
    expect(new URL(page.url()).pathname).toBe('/admin');
    return { context, page };
  };
}

/** The session cookie the browser holds for that origin, as a Cookie header value. */
export async function browserCookie(context: BrowserContext, origin: string): Promise<string> {
  return (await context.cookies(origin)).map((c) => `${c.name}=${c.value}`).join('; ');
}

/**
 * axe's violations on the page as it stands, of every impact, in the parts `include` selects (the
 * whole page when it selects none). Through axe-core's own interface: its source evaluated in the
 * document once (a second check of the same document reuses it), then `axe.run` there, asked for
 * violations only (passes and inapplicable rules are not gathered, so not described node by node).
 * The admin pages have no frames, so nothing is lost against a run across frames; the wrapper
 * package evaluated the 600-kB source twice a check and finished every run in a new blank page,
 * which tripled a check's time (issue 43, point 5: 109 checks a walk of every page).
 */
export async function axeViolations(page: Page, include: readonly string[] = []): Promise<axe.Result[]> {
  const loaded = await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe === 'object');
  if (!loaded) await page.evaluate(axe.source);
  const results = await page.evaluate(
    ({ context, options }) => (globalThis as unknown as { axe: typeof axe }).axe.run(context, options),
    { context: { include: [...include], exclude: [] }, options: { resultTypes: ['violations'] } } as {
      context: axe.ContextObject;
      options: axe.RunOptions;
    },
  );
  return results.violations;
}

/**
 * Has every document the context opens load axe-core's source before its own scripts (an init
 * script), so that axeViolations finds it there: a context that checks page after page (the
 * every-page walks: 109 pages each) then pays no evaluation of the 600-kB source after each load.
 * Chromium keeps the compiled init script between documents; evaluated after the load, the source
 * is compiled again in each (about 290 ms against 60 ms a page, measured side by side on a
 * loaded machine). What axe checks is the same: the same axe-core, the same run in the same page.
 */
export async function preloadAxe(context: BrowserContext): Promise<void> {
  await context.addInitScript({ content: axe.source });
}

/** axe's serious and critical findings on the page as it stands, one line each (empty when clean). */
export async function seriousViolations(page: Page): Promise<string[]> {
  return (await axeViolations(page))
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}
