import AxeBuilder from '@axe-core/playwright';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';
import type { TestApp } from '../helpers/app.ts';

import { CHROMIUM, CHROMIUM_ARGS } from '../helpers/chromium.ts';

export { CHROMIUM, CHROMIUM_ARGS, hasChromium, warnNoChromium } from '../helpers/chromium.ts';

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** Starts the app's server on a free port; returns the origin of a host on it. */
export async function listen(app: TestApp): Promise<(host: string) => string> {
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.web!.server.address() as AddressInfo;
  return (host) => `http://${host}:${port}`;
}

/**
 * Signs in through /admin/login as a person would (the form, posted without help), and lands on
 * the dashboard.
 */
export async function signInThroughLogin(browser: Browser, origin: string, person: { email: string; password: string }, options: { javaScriptEnabled?: boolean } = {}): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ javaScriptEnabled: options.javaScriptEnabled ?? true });
  const page = await context.newPage();
  await page.goto(`${origin}/admin/login`);
  await page.fill('input[name=email]', person.email);
  await page.fill('input[name=password]', person.password);
  await Promise.all([page.waitForURL(`${origin}/admin`), page.click('main form button[type=submit]')]);
  expect(new URL(page.url()).pathname).toBe('/admin');
  return { context, page };
}

/** The session cookie the browser holds for that origin, as a Cookie header value. */
export async function browserCookie(context: BrowserContext, origin: string): Promise<string> {
  return (await context.cookies(origin)).map((c) => `${c.name}=${c.value}`).join('; ');
}

/** axe's serious and critical findings on the page as it stands, one line each (empty when clean). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}
