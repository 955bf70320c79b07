import { STATUS_CODES } from 'node:http';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { OPERATOR_HOST } from '../helpers/app.ts';
import {
  hasChromium,
  preloadAxe,
  seriousViolations,
  signInThroughLogin,
  useBrowserApp,
  type BrowserApp,
} from './admin-pages-setup.ts';
import { shellSample, type ShellSample } from './shell-sample.ts';
import { SHELL_FILES } from '../../framework/admin/assets.ts';
import { PAGE_TOOLS_HREF } from '../../framework/admin/page-tools.ts';

// Issue 42, acceptance: every admin page, generated and hand-written, as a customer's
// administrator and as the operator's, on a 390-px phone: the page does not scroll sideways as a
// whole, no action button starts off-screen (nor ends past it), axe finds no serious or critical
// violation, every link to the shell's files names the file's current version, and the page says
// nothing in the console and has nothing blocked by the CSP. The pages are
// found as a person finds them, by following the links from the dashboard; the routes the shell
// registers are read from the server, and a page pattern no link led to is opened by its address
// (with an id a sibling page used), so a page added later is visited too, or this test names it.
// One file per person (admin-every-page*.test.ts), so the two walks run on two workers at once.

/**
 * The page as loaded (goto waits for its load event: styles and scripts) and with every part the
 * shell loads after it in place: a part htmx fetches on load is marked aria-busy until it is
 * swapped in (the health page's checks), and htmx marks a request in flight with .htmx-request.
 * Instead of playwright's networkidle, which waits 500 ms of silence on every page.
 */
const settled = (page: Page) =>
  page.waitForFunction(() => {
    const { document } = globalThis as unknown as { document: { querySelector(selector: string): unknown } };
    return document.querySelector('[aria-busy="true"], .htmx-request') === null;
  });

export const PHONE = { width: 390, height: 844 };

/**
 * GET routes that are no page a person opens: the shell's assets, the rows and options fragments
 * htmx swaps into a page (each shown inside its page, which is visited), the page's live stream
 * and the badge it swaps in (assets/live.js), and the sign-in page, which is visited signed out.
 */
const NOT_PAGES = [/^\/admin\/_assets\//, /^\/admin\/_live\//, /\/rows$/, /\/options$/, /^\/admin\/login$/, /\*$/];

/** Every GET path the server routes under /admin, as fastify prints its route tree (parameters as :name). */
function adminPagePatterns(t: BrowserApp): string[] {
  const tree = t.app.web!.printRoutes({ method: 'GET', commonPrefix: false });
  const prefixes: string[] = [];
  const found: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│ ]*)[└├]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const path = (prefixes[depth - 1] ?? '') + match[2]!;
    prefixes[depth] = path;
    prefixes.length = depth + 1;
    if (match[3]?.includes('GET') && path.startsWith('/admin')) found.push(path.replace(/\/$/, '') || '/');
  }
  return [...new Set(found)].filter((path) => !NOT_PAGES.some((skip) => skip.test(path))).sort();
}

const patternOf = (route: string) => new RegExp(`^${route.replace(/:[A-Za-z]+/g, '[^/]+')}$`);

/** The route a path is served by: of those that match, the one with the fewest parameters (/new before /:id). */
const bestPattern = (patterns: readonly string[], path: string): string | undefined =>
  patterns.filter((p) => patternOf(p).test(path)).sort((a, b) => a.split(':').length - b.split(':').length)[0];

/** What is wrong with the page as it stands, one line each: sideways scroll, an action off-screen. */
export const layoutFaults = (page: Page) =>
  page.evaluate(() => {
    const { document, innerWidth } = globalThis as unknown as {
      innerWidth: number;
      document: {
        documentElement: { scrollWidth: number };
        querySelectorAll(selector: string): ArrayLike<{
          textContent: string | null;
          getBoundingClientRect(): { left: number; right: number; width: number; height: number };
        }>;
      };
    };
    const faults: string[] = [];
    const wide = document.documentElement.scrollWidth;
    if (wide > innerWidth + 1) faults.push(`the page scrolls sideways: ${wide}px for ${innerWidth}px`);
    const actions = document.querySelectorAll(
      'button, .button, input[type=submit], summary, main a[href*="/delete"], main a[download]',
    );
    for (const action of Array.from(actions)) {
      const box = action.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue; // not shown (a closed menu's, a hidden Copy link)
      if (box.left < -1 || box.left >= innerWidth || box.right > innerWidth + 1)
        faults.push(
          `"${(action.textContent ?? '').trim().slice(0, 40)}" at ${Math.round(box.left)}–${Math.round(box.right)} of ${innerWidth}px`,
        );
    }
    return faults;
  });

interface Visit {
  status: number;
  faults: string[];
  axe: string[];
  /**
   * What the page said in the console (errors and warnings, uncaught exceptions) and what the CSP
   * blocked in it; a refused page's own status ("Failed to load resource: … 404") is no fault.
   */
  console: string[];
  /** The page's links into the shell's asset folder that name no current version (docs/admin.md). */
  unversioned: string[];
}

/** Where the CSP watch (an init script: it runs before the page's own) keeps what the policy blocked. */
const CSP_BLOCKED = '__cspBlocked';
const CSP_WATCH = `globalThis.${CSP_BLOCKED} = [];
document.addEventListener('securitypolicyviolation', (e) => globalThis.${CSP_BLOCKED}.push(
  e.effectiveDirective + ' ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));`;

/** What Chromium says of a page answered with a 4xx: the refusal the walk may open on purpose. */
const ownStatus = (status: number) =>
  `Failed to load resource: the server responded with a status of ${status} (${STATUS_CODES[status]})`;

/** The links a page may give to the shell's files: each with its content's current hash. */
const VERSIONED = new Set([...Object.values(SHELL_FILES).map((file) => file.href), PAGE_TOOLS_HREF]);

/**
 * Visits every admin page the signed-in person can reach from the dashboard (links in the sidebar
 * and the page), then opens each route pattern no link led to by its address, with the id of a
 * page of the same resource. Returns what each page showed, by path.
 */
async function visitAll(page: Page, origin: string, patterns: readonly string[]): Promise<Map<string, Visit>> {
  const seen = new Map<string, Visit>();
  const visited = new Set<string>();
  const byPattern = (path: string) => bestPattern(patterns, path);
  const queue: string[] = ['/admin'];
  let said: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning') said.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => said.push(`uncaught: ${error.message}`));
  await page.context().addInitScript({ content: CSP_WATCH });
  const visit = async (path: string) => {
    said = [];
    const answer = await page.goto(`${origin}${path}`);
    await settled(page);
    const status = answer?.status() ?? 0;
    const blocked = (await page.evaluate(`globalThis.${CSP_BLOCKED} ?? ['the CSP watch did not run']`)) as string[];
    seen.set(path, {
      status,
      console: [
        ...said.filter((line) => line !== `error: ${ownStatus(status)}`),
        ...blocked.map((what) => `the CSP blocked ${what}`),
      ],
      faults: await layoutFaults(page),
      axe: await seriousViolations(page),
      unversioned: (
        await page
          .locator('link[href^="/admin/_assets/"], script[src^="/admin/_assets/"]')
          .evaluateAll((links) => links.map((link) => link.getAttribute('href') ?? link.getAttribute('src')!))
      ).filter((link) => !VERSIONED.has(link)),
    });
    const pattern = byPattern(path);
    if (pattern) visited.add(pattern);
    return page
      .locator('a[href^="/admin"]')
      .evaluateAll((links) => links.map((a) => a.getAttribute('href')!.split('#', 1)[0]!.split('?', 1)[0]!));
  };
  while (queue.length > 0) {
    const path = queue.shift()!;
    for (const link of await visit(path)) {
      const pattern = byPattern(link);
      if (!pattern || visited.has(pattern) || queue.some((q) => byPattern(q) === pattern)) continue;
      queue.push(link);
    }
  }
  // What no link led to (a command the sample's rows cannot take now, a check's own page): by address.
  const values: Record<string, string> = { check: 'database' };
  for (const pattern of patterns.filter((p) => !visited.has(p))) {
    // The record's page of the same resource (`<base>/:id`) that was opened gives the id.
    const base = pattern.replace(/\/:[A-Za-z]+(\/.*)?$/, '');
    const record = patterns.find(
      (p) => p.startsWith(`${base}/:`) && p.split('/').length === base.split('/').length + 1,
    );
    const sibling = [...seen.keys()].find((path) => record !== undefined && byPattern(path) === record);
    const id = sibling?.slice(base.length + 1);
    const path = pattern.replace(/:([A-Za-z]+)/g, (_, name: string) => values[name] ?? id ?? `no-${name}`);
    await visit(path);
  }
  return seen;
}

/**
 * The file's test: every page the person can reach, on a phone, as described above. Call it at the
 * top of a test file (it sets up the app, the browser and the shell's sample).
 */
export function everyPageOnAPhone(who: 'customer admin' | 'operator'): { t: BrowserApp; sample: () => ShellSample } {
  const t = useBrowserApp();
  let sample: ShellSample;
  beforeAll(async () => {
    if (!hasChromium) return;
    sample = await shellSample(t.app, 'acme');
  }, 120_000);

  describe.skipIf(!hasChromium)('every admin page on a 390-px phone', () => {
    const rule =
      "no sideways scroll, no action off-screen, no serious axe finding, the shell's files linked by version, " +
      'no console error, nothing blocked by the CSP';
    it(`${rule} (${who})`, async () => {
      const host = who === 'operator' ? OPERATOR_HOST : sample.host;
      const person = who === 'operator' ? sample.operatorAdmin : sample.admin;
      const { context, page } = await signInThroughLogin(t.browser, t.origin(host), person);
      try {
        await preloadAxe(context);
        await page.setViewportSize(PHONE);
        const patterns = adminPagePatterns(t);
        const seen = await visitAll(page, t.origin(host), patterns);
        // Every page the server has was opened (by a link, or by its address).
        const opened = new Set([...seen.keys()].map((path) => bestPattern(patterns, path)));
        expect(patterns.filter((p) => !opened.has(p))).toEqual([]);
        expect(seen.size).toBeGreaterThan(30);
        const wrong = [...seen].flatMap(([path, visit]) => [
          ...(visit.status >= 500 || visit.status === 0 ? [`${path}: answered ${visit.status}`] : []),
          ...visit.faults.map((fault) => `${path}: ${fault}`),
          ...visit.axe.map((finding) => `${path}: ${finding}`),
          ...visit.unversioned.map((link) => `${path}: links ${link}, not its current version`),
          ...visit.console.map((line) => `${path}: ${line}`),
        ]);
        expect(wrong).toEqual([]);
      } finally {
        await context.close();
      }
    }, 900_000);
  });
  return { t, sample: () => sample };
}
