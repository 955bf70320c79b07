import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHROMIUM,
  CHROMIUM_HEADLESS_SHELL,
  closeContexts,
  hasChromium,
  warnNoChromium,
  workerChromium,
} from '../helpers/chromium.ts';

// The browser files share their worker's Chromium (test/helpers/chromium.ts, workerChromium): one
// launch a worker process instead of one a file. What that may not cost: a file's cookies and
// storage reaching the next file, or a file that closed the browser leaving the next without one.

warnNoChromium('test/browser/worker-chromium.test.ts');

let server: Server;
let origin: string;

beforeAll(async () => {
  // A page that sets a cookie and local storage when asked, and says what it was sent.
  server = createServer((req, res) => {
    const headers: Record<string, string> = { 'Content-Type': 'text/html' };
    if (req.url === '/set') headers['Set-Cookie'] = 'left=behind; Path=/';
    res.writeHead(200, headers);
    res.end(`<!doctype html><title>cookie</title><p id="sent">${req.headers.cookie ?? 'none'}</p>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe.skipIf(!hasChromium)("the worker's Chromium, shared by the browser files of one process", () => {
  it('is launched once: a second file asking gets the same browser, still running after the first closed its contexts', async () => {
    const first = await workerChromium();
    await first.newContext();
    await closeContexts(first);
    expect(first.contexts()).toHaveLength(0);
    expect(first.isConnected()).toBe(true);
    expect(await workerChromium()).toBe(first);
  });

  it('hands the next file a fresh context: no cookie or local storage of the file before it', async () => {
    const browser = await workerChromium();
    const before = await browser.newContext();
    const page = await before.newPage();
    await page.goto(`${origin}/set`);
    // The page's code is a string: the tests are type-checked without the DOM's types.
    await page.evaluate("localStorage.setItem('left', 'behind')");
    await page.goto(`${origin}/`);
    expect(await page.textContent('#sent')).toBe('left=behind');
    await closeContexts(browser);

    const next = await (await workerChromium()).newContext();
    const fresh = await next.newPage();
    await fresh.goto(`${origin}/`);
    expect(await fresh.textContent('#sent')).toBe('none');
    expect(await fresh.evaluate("localStorage.getItem('left')")).toBeNull();
    await next.close();
  });

  it('is launched again when a file closed it', async () => {
    const closed = await workerChromium();
    await closed.close();
    const again = await workerChromium();
    expect(again).not.toBe(closed);
    expect(again.isConnected()).toBe(true);
    const context = await again.newContext();
    await (await context.newPage()).goto(`${origin}/`);
    await closeContexts(again);
  });

  // The headless shell took a third less CPU than the full browser for the same files
  // (docs/performance.md, "The browser files on Chromium's headless shell").
  it.skipIf(process.env.CHROMIUM !== undefined || !existsSync(CHROMIUM_HEADLESS_SHELL))(
    "is Chromium's headless shell when it is installed",
    async () => {
      expect(CHROMIUM).toBe(CHROMIUM_HEADLESS_SHELL);
      expect((await workerChromium()).isConnected()).toBe(true);
    },
  );
});
