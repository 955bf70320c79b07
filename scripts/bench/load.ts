import autocannon from 'autocannon';

export interface Target {
  url: string;
  method: 'GET' | 'POST' | 'PATCH';
  /**
   * Paths on the url's origin to spread the requests over, one picked at random per request (a
   * PATCH of many rows rather than one row every connection waits for); its body then comes from
   * bodyOf, given the request's number, instead of body.
   */
  paths?: readonly string[];
  bodyOf?: (n: number) => string;
  headers?: Record<string, string>;
  /** `[<id>]` in the body is replaced by a fresh id per request (unique names for creates). */
  body?: string;
  /** The one status that counts as answered (e.g. 304 for a conditional GET); default any 2xx. */
  expectStatus?: number;
}

export interface Sample {
  ok: number;
  refused: Record<string, number>;
  errors: number;
  seconds: number;
  /** Latency of every expected (2xx by default) response, milliseconds with sub-millisecond precision. */
  latencies: number[];
}

/** Closed-loop load: `connections` clients, each sending its next request when the last is answered. */
export function hammer(target: Target, connections: number, seconds: number): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const latencies: number[] = [];
    const refused: Record<string, number> = {};
    const started = performance.now();
    const instance = autocannon(
      {
        url: target.url,
        method: target.method,
        headers: target.headers ?? {},
        ...(target.body !== undefined ? { body: target.body, idReplacement: target.body.includes('[<id>]') } : {}),
        ...(target.paths ? { requests: [{ setupRequest: spread(target.paths, target.bodyOf) }] } : {}),
        connections,
        duration: seconds,
        timeout: 30,
      },
      (err, result) => {
        if (err) return reject(err);
        resolve({
          ok: latencies.length,
          refused,
          errors: result.errors + result.timeouts,
          seconds: (performance.now() - started) / 1000,
          latencies,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      const expected =
        target.expectStatus === undefined ? statusCode >= 200 && statusCode < 300 : statusCode === target.expectStatus;
      if (expected) latencies.push(responseTime);
      else refused[statusCode] = (refused[statusCode] ?? 0) + 1;
    });
  });
}

let spreadCount = 0;
/** Each request to one of the paths at random, with its own body. */
const spread =
  (paths: readonly string[], bodyOf: ((n: number) => string) | undefined) =>
  (request: { path?: string; body?: string }) => ({
    ...request,
    path: paths[Math.floor(Math.random() * paths.length)]!,
    ...(bodyOf ? { body: bodyOf(++spreadCount) } : {}),
  });

export interface Figures {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
}

/** Pools the rounds of one scenario: throughput over their total time, percentiles over every response. */
export function combine(samples: Sample[]): Figures {
  const ok = samples.reduce((n, s) => n + s.ok, 0);
  const seconds = samples.reduce((n, s) => n + s.seconds, 0);
  const all = Float64Array.from(samples.flatMap((s) => s.latencies)).sort();
  return { rps: ok / seconds, p50_ms: percentile(all, 50), p99_ms: percentile(all, 99), requests: ok };
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** Refuses to report figures of a run where the server answered anything but what the target expects. */
export function assertClean(name: string, sample: Sample): void {
  const refused = Object.entries(sample.refused);
  if (refused.length > 0 || sample.errors > 0) {
    const codes = refused.map(([code, n]) => `${n}× ${code}`).join(', ');
    throw new Error(
      `${name}: ${codes || ''}${codes && sample.errors ? ', ' : ''}${sample.errors ? `${sample.errors} errors/timeouts` : ''} — the figures would not measure the scenario`,
    );
  }
}
