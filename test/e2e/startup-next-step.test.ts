import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.ts';
import { adminInvite, startService, stopService } from './processes.ts';

/**
 * Rule: the newcomer's first minutes. The startup log names the URL a person can open
 * (http://localhost:<port> with the default public host, not the bound 127.0.0.1, which names no
 * tenant) and, while the operator tenant has no user, the exact next command.
 */

interface Entry {
  msg: string;
  url?: string;
  listening?: string;
  next?: string;
}

const entries = (log: string): Entry[] =>
  log
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Entry);

async function eventually<T>(check: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A GET to the bound address with the Host header a browser opening `url` would send. */
function open(listening: string, url: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, listening), { headers: { host: new URL(url).host }, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const NEXT = 'npm run admin:invite -- <you@example.com>';

describe('the startup log of a new installation', () => {
  it('prints http://localhost:<port> and, until the operator tenant has a user, the exact admin:invite command', async () => {
    // The default public host (localhost), as a newcomer runs it.
    const settings = {
      TENANTRY_DATABASE_URL: await createTestDatabase(),
      TENANTRY_SERVER_PORT: '0',
      TENANTRY_SERVER_LOG_LEVEL: 'info',
    };

    const first = await startService(settings);
    try {
      const started = entries(first.log()).find((e) => e.msg === 'tenantry started')!;
      const port = new URL(started.listening!).port;
      expect(started.listening).toBe(`http://127.0.0.1:${port}`);
      expect(started.url).toBe(`http://localhost:${port}`);
      expect(started.next).toBe(NEXT);
      const hint = await eventually(
        () => entries(first.log()).find((e) => e.msg.includes('admin:invite')),
        'the next-command line',
      );
      expect(hint.msg).toContain(`run: ${NEXT}`);
      // The printed URL reaches the operator tenant (the bound address would be NO_SITE).
      const viaUrl = await open(started.listening!, started.url!, '/api/v1/auth/me');
      expect(JSON.parse(viaUrl.body).code).toBe('AUTH_REQUIRED');
      const viaBound = await open(started.listening!, started.listening!, '/api/v1/auth/me');
      expect(JSON.parse(viaBound.body).code).toBe('NO_SITE');
    } finally {
      await stopService(first.child);
    }

    const invited = await adminInvite(['first@example.com'], settings);
    expect(invited.code, invited.stderr).toBe(0);

    const second = await startService(settings);
    try {
      const started = entries(second.log()).find((e) => e.msg === 'tenantry started')!;
      expect(started.next).toBeUndefined();
      expect(second.log()).not.toContain(NEXT);
    } finally {
      await stopService(second.child);
    }
  }, 180_000);
});
