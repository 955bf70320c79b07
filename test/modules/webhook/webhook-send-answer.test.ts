import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send, type SendPolicy, TOTAL_TIMEOUT_MS } from '../../../modules/webhook/send.ts';

// A loopback receiver: plain http and private networks allowed, so only its answer decides.
const policy: SendPolicy = { allowHttp: true, allowPrivateNetworks: true };
let server: http.Server;
let base = '';

/** What the receiver does once the request has arrived whole, by path. */
const answers: Record<string, (res: http.ServerResponse) => void> = {
  // A 200 whose body stops after 7 of the 100 bytes it announced: the connection is cut.
  '/cut': (res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '100' });
    res.write('partial');
    setTimeout(() => res.socket?.destroy(), 50);
  },
  // A 200 whose body never ends.
  '/stalled': (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('started');
  },
  // A whole 200 longer than the part of an answer that is read (64 KiB): dropped past it, still a 200.
  '/long': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(256 * 1024)),
  '/ok': (res) => res.writeHead(204).end(),
};

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => answers[req.url ?? '']?.(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('an attempt succeeds only on a complete 2xx answer (docs/webhooks.md, "What is sent")', () => {
  it('a 2xx answer cut short fails the attempt, with the status it had begun', async () => {
    const attempt = await send(`${base}/cut`, {}, '{}', policy);
    expect(attempt).toMatchObject({ outcome: 'failed', error: expect.stringMatching(/200.*cut short/) });
  });

  it('a 2xx answer not complete within 10 s fails the attempt', async () => {
    const attempt = await send(`${base}/stalled`, {}, '{}', policy);
    expect(attempt).toMatchObject({ outcome: 'failed', error: `no answer within ${TOTAL_TIMEOUT_MS / 1000} s` });
    expect(attempt.durationMs).toBeGreaterThanOrEqual(TOTAL_TIMEOUT_MS - 50);
  }, 20_000);

  it('a complete 2xx answer succeeds, also one longer than the part that is read', async () => {
    expect(await send(`${base}/ok`, {}, '{}', policy)).toMatchObject({ outcome: 'answered', status: 204 });
    expect(await send(`${base}/long`, {}, '{}', policy)).toMatchObject({ outcome: 'answered', status: 200 });
  });
});
