import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/**
 * Debian's Chromium, which the browser tests and screenshots drive with playwright-core: its old
 * headless shell (package chromium-headless-shell) when installed, else the full browser (package
 * chromium) in its headless mode; .ci/run installs both. The shell is the same Chromium release,
 * the same Blink, V8 and layout, without the full browser's windowing layers; four browser files
 * took a third less CPU on it (docs/performance.md, "The browser files on Chromium's headless
 * shell"). `CHROMIUM=<path>` picks another.
 */
export const CHROMIUM_HEADLESS_SHELL = '/usr/bin/chromium-headless-shell';
export const CHROMIUM =
  process.env.CHROMIUM ?? (existsSync(CHROMIUM_HEADLESS_SHELL) ? CHROMIUM_HEADLESS_SHELL : '/usr/bin/chromium');
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--no-proxy-server',
  // Every tenant host (acme.localhost, evil.example.com, operator.localhost) is this machine.
  '--host-resolver-rules=MAP * 127.0.0.1',
];

export const hasChromium = existsSync(CHROMIUM);

/** Says, loudly, that a browser suite did not run: only when chromium is absent. */
export function warnNoChromium(suite: string): void {
  if (hasChromium) return;
  const line = '!'.repeat(100);
  process.stderr.write(
    `\n${line}\n!!! SKIPPED: ${suite} needs Chromium at ${CHROMIUM} (apt-get install chromium-headless-shell or chromium; .ci/run installs both)\n${line}\n\n`,
  );
}

let running: Promise<Browser> | undefined;

/**
 * This worker process's Chromium, through playwright-core's `chromium.launch`: launched by the first
 * browser file the process runs and kept for the files after it, as the project `slow` runs its
 * files one after another in a shared process (`isolate: false`, vitest.config.ts). Launching took
 * about 2 s of wall time and 0.4 s of CPU a file, some 30 files (docs/performance.md, "One Chromium
 * a worker"). Files share the browser process, never a context: each file opens its own with
 * `browser.newContext()` (cookies, storage and cache of its own) and closes them at its end
 * (closeContexts). Launched again when it is gone (a file closed it, or it crashed). Closed with the
 * process: vitest stops a worker with SIGTERM, on which the launched browser closes (launch's
 * `handleSIGTERM`, on by default), and a browser whose pipe to the process closes ends too.
 */
export async function workerChromium(): Promise<Browser> {
  const browser = await running?.catch(() => undefined);
  if (browser?.isConnected()) return browser;
  running = chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  return running;
}

/** Closes every context open in the browser, which stays up for the worker's next file: a file's end. */
export async function closeContexts(browser: Browser): Promise<void> {
  await Promise.all(browser.contexts().map((context) => context.close()));
}
