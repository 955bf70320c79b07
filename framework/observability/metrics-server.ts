import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics.ts';

export const METRICS_PATH = '/metrics';

/** metrics.port as configured: a port, or off (empty or 0). */
export function metricsPort(port: number | string | null | undefined): number | undefined {
  return typeof port === 'number' && port > 0 ? port : undefined;
}

export interface MetricsServer {
  /** Where it listens, e.g. http://127.0.0.1:9464. */
  url: string;
  close(): Promise<void>;
}

/**
 * The metrics listener: its own HTTP server on metrics.host:metrics.port, apart from the tenant
 * server, so the series are never answered on a tenant's host and the port can be firewalled on its
 * own. It answers GET /metrics (Prometheus text format) and 404 to anything else.
 */
export async function startMetricsServer(
  metrics: Metrics,
  host: string,
  port: number,
  onError: (err: unknown) => void,
): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?', 1)[0];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || path !== METRICS_PATH) {
      res
        .writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
        .end('Not found: the metrics are at GET /metrics\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        onError(err);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The metrics could not be collected\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
