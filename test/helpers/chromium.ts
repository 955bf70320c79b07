import { existsSync } from 'node:fs';

/** Debian's chromium, as .ci/run installs it; the browser tests and screenshots drive it with playwright-core. */
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
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
    `\n${line}\n!!! SKIPPED: ${suite} needs Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)\n${line}\n\n`,
  );
}
