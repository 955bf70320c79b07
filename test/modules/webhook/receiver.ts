import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** When the request had arrived whole (performance.now()). */
  at: number;
}

/**
 * A real HTTP receiver on a loopback address: records every request, and answers each path with
 * the statuses queued for it (then 200), or a redirect when one is set.
 */
export async function startReceiver(host = '127.0.0.1') {
  const received: Received[] = [];
  const statuses = new Map<string, number[]>();
  const redirects = new Map<string, string>();
  const delays = new Map<string, number>();
  /** Paths whose answers wait until released: the answers waiting, by path. */
  const held = new Map<string, (() => void)[]>();
  const inFlight = new Map<string, number>();
  const mostAtOnce = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path0 = req.url ?? '/';
    inFlight.set(path0, (inFlight.get(path0) ?? 0) + 1);
    mostAtOnce.set(path0, Math.max(mostAtOnce.get(path0) ?? 0, inFlight.get(path0)!));
    res.on('close', () => inFlight.set(path0, inFlight.get(path0)! - 1));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({
        path,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
      });
      const redirect = redirects.get(path);
      if (redirect) {
        res.writeHead(302, { location: redirect }).end();
        return;
      }
      const status = statuses.get(path)?.shift() ?? 200;
      const answer = () => res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'no');
      const waiting = held.get(path);
      const delay = delays.get(path);
      if (waiting) waiting.push(answer);
      else if (delay) setTimeout(answer, delay);
      else answer();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const base = host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
  return {
    port,
    url: (path: string) => `${base}${path}`,
    received,
    at: (path: string) => received.filter((r) => r.path === path),
    answer: (path: string, ...codes: number[]) => statuses.set(path, codes),
    redirect: (path: string, to: string) => redirects.set(path, to),
    /** Answers the path only after ms milliseconds. */
    slow: (path: string, ms: number) => delays.set(path, ms),
    /**
     * Answers the path only once the returned function is called (then at once): a test that needs
     * a slow receiver waits for what it checks, not for a clock a loaded machine can outrun.
     */
    hold: (path: string) => {
      held.set(path, []);
      return () => {
        const waiting = held.get(path) ?? [];
        held.delete(path);
        for (const answer of waiting) answer();
      };
    },
    /** The most requests of the path that were open at once. */
    mostAtOnce: (path: string) => mostAtOnce.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
