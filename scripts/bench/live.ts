import { request, type ClientRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { send } from './http.ts';
import type { ServerProcess } from './child.ts';
import type { LiveStats } from './protocol.ts';
import type { ResultRow } from './report.ts';

/**
 * Issue 45, point 9: live streams under load. Streams of the widget list are opened on the bench
 * tenant, 10, then 100, then 1,000 (the service's sessions: live.max_streams_per_caller each), and
 * at each count creates are committed at a fixed rate (open loop) for a while. Reported per count:
 *   - commit→delivery p50 and p99: on a sample of the streams, the arrival of a widget's created
 *     event minus its row's createdAt (the transaction's time: a bound from above of its commit);
 *   - the database statements per live batch, counted on the service's driver (live-service.ts):
 *     they must not grow with the number of streams;
 *   - the service process's RSS.
 * Then the list's throughput with the 1,000 streams open beside it, over the same list with none
 * open, both while the creates run (target ≥ 0.85×).
 * Scaled to the machine: the scenario is 1,000 streams on one tenant plus 1,000 over 100
 * tenants at 200 creates/s; the run takes the counts and rate it is given (--live-rate).
 */

const LIST = '/api/v1/testkit/widgets';
const STREAM = `${LIST}/stream?fields=name,createdAt`;
/** Streams whose events are read and timed; the others are read and discarded, as a client would. */
const SAMPLED = 10;
const PER_SESSION = 10;
const LIST_CONNECTIONS = 8;

interface OpenStream {
  req: ClientRequest;
  /** Arrival (ms since the epoch) of each created widget's event, by name. */
  arrivals: Map<string, number> | undefined;
  createdAt: Map<string, number>;
}

function openStream(port: number, host: string, cookie: string, sampled: boolean): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const stream: OpenStream = {
      req: undefined as unknown as ClientRequest,
      arrivals: undefined,
      createdAt: new Map(),
    };
    const req = request(
      { host: '127.0.0.1', port, path: STREAM, agent: false, headers: { host, cookie, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`a stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        if (!sampled) {
          res.resume();
          resolve(stream);
          return;
        }
        stream.arrivals = new Map();
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = Date.now();
          buffer += chunk;
          let cut: number;
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            if (!block.includes('event: created')) continue;
            const data = block.split('\n').find((line) => line.startsWith('data: '));
            if (!data) continue;
            const { row } = JSON.parse(data.slice(6)) as { row: { name: string; createdAt: string } };
            stream.arrivals!.set(row.name, now);
            stream.createdAt.set(row.name, Date.parse(row.createdAt));
          }
        });
        resolve(stream);
      },
    );
    stream.req = req;
    req.on('error', reject);
    req.end();
  });
}

const rssMib = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
};

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates at `rate` per second for `seconds` (open loop): each leaves on time whatever the earlier ones do. */
async function createAtRate(
  port: number,
  host: string,
  cookie: string,
  tag: string,
  rate: number,
  seconds: number,
): Promise<string[]> {
  const names: string[] = [];
  const pending: Promise<void>[] = [];
  const start = performance.now();
  const count = Math.round(rate * seconds);
  for (let n = 0; n < count; n++) {
    const wait = start + (n * 1000) / rate - performance.now();
    if (wait > 0.5) await sleep(wait);
    const name = `live-${tag}-${n}`;
    names.push(name);
    pending.push(
      send(port, {
        method: 'POST',
        path: LIST,
        host,
        headers: { cookie },
        json: { name, size: 1, color: 'blue', note: 'created by the live bench' },
      }).then((answer) => {
        if (answer.status !== 201) throw new Error(`a create answered ${answer.status}: ${answer.body}`);
      }),
    );
  }
  await Promise.all(pending);
  return names;
}

/** List requests on `connections` loops for `seconds`: requests per second answered 200. */
async function listThroughput(port: number, host: string, cookie: string, seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: LIST_CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const answer = await send(port, { method: 'GET', path: `${LIST}?limit=20`, host, headers: { cookie } });
        if (answer.status !== 200) throw new Error(`the list answered ${answer.status}`);
        done++;
      }
    }),
  );
  return done / seconds;
}

export async function measureLiveGroup(options: {
  service: ServerProcess;
  host: string;
  cookie: string;
  counts: readonly number[];
  rate: number;
  seconds: number;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  const { service, host, cookie, log, rate, seconds } = options;
  const port = service.port;
  const most = Math.max(...options.counts);
  const { cookies } = await service.ask(
    { type: 'live-sessions', count: Math.ceil(most / PER_SESSION) },
    'live-sessions',
    60_000,
  );
  const stats = async (): Promise<LiveStats> => (await service.ask({ type: 'live-stats' }, 'live-stats', 10_000)).stats;
  await stats();
  const idleRss = rssMib(service.pid);
  log(`  service RSS before any stream opens: ${idleRss.toFixed(0)} MiB`);
  const streams: OpenStream[] = [];
  const rows: ResultRow[] = [];
  for (const count of options.counts) {
    while (streams.length < count) {
      const i = streams.length;
      streams.push(await openStream(port, host, cookies[Math.floor(i / PER_SESSION)]!, i < SAMPLED));
    }
    await sleep(1000);
    const before = await stats();
    const tag = `${count}-${Date.now().toString(36)}`;
    const names = await createAtRate(port, host, cookie, tag, rate, seconds);
    // Every sampled stream has received every create, or 10 s have passed.
    const deadline = Date.now() + 10_000;
    const sampled = streams.slice(0, SAMPLED);
    while (Date.now() < deadline && sampled.some((s) => names.some((n) => !s.arrivals!.has(n)))) await sleep(50);
    const after = await stats();
    const latencies: number[] = [];
    let missing = 0;
    for (const stream of sampled)
      for (const name of names) {
        const arrived = stream.arrivals!.get(name);
        if (arrived === undefined) missing++;
        else latencies.push(arrived - stream.createdAt.get(name)!);
      }
    if (latencies.length === 0) throw new Error(`live: no created event reached the ${sampled.length} sampled streams`);
    latencies.sort((a, b) => a - b);
    const batches = after.batches - before.batches;
    const perBatch = batches > 0 ? (after.statements - before.statements) / batches : Number.NaN;
    const rss = rssMib(service.pid);
    const p99 = percentile(latencies, 99);
    log(
      `  ${count} streams, ${names.length} creates at ${rate}/s: commit→delivery p50 ${percentile(latencies, 50)} ms, p99 ${p99} ms` +
        ` (${latencies.length} deliveries timed on ${sampled.length} streams, ${missing} missing); ${batches} batches,` +
        ` ${perBatch.toFixed(2)} statements each; service RSS ${rss.toFixed(0)} MiB`,
    );
    rows.push({
      name: `live-${count}-streams`,
      rps: null,
      p50_ms: percentile(latencies, 50),
      p99_ms: p99,
      ratio_to_baseline: null,
      target: 'p99 ≤ 250 ms, RSS < 300 MiB, statements per batch flat',
      met: p99 <= 250 && rss < 300 && missing === 0,
      samples: latencies.length,
      streams: count,
      statements_per_batch: perBatch,
      batches,
      rss_mib: rss,
      rss_growth_mib: rss - idleRss,
      rate,
    });
  }
  const perBatch = rows.map((r) => r.statements_per_batch!);
  const flat = Math.max(...perBatch) === Math.min(...perBatch);
  log(
    `  statements per batch at ${options.counts.join(', ')} streams: ${perBatch.join(', ')} (${flat ? 'flat' : 'NOT flat'})`,
  );
  for (const row of rows) row.met = row.met! && flat;

  // The list beside the streams: with them open, then with none, the creates running in both.
  const listSeconds = Math.max(3, Math.min(seconds, 10));
  const beside = async (tag: string) => {
    const creates = createAtRate(port, host, cookie, tag, rate, listSeconds + 1);
    const rps = await listThroughput(port, host, cookie, listSeconds);
    await creates;
    return rps;
  };
  const withStreams = await beside(`list-with-${Date.now().toString(36)}`);
  for (const stream of streams) stream.req.destroy();
  await sleep(1000);
  const without = await beside(`list-without-${Date.now().toString(36)}`);
  const ratio = withStreams / without;
  log(
    `  list beside ${streams.length} open streams: ${withStreams.toFixed(0)} req/s, with none open ${without.toFixed(0)} req/s (${ratio.toFixed(3)}×)`,
  );
  rows.push({
    name: `live-list-beside-${streams.length}-streams`,
    rps: withStreams,
    p50_ms: null,
    p99_ms: null,
    ratio_to_baseline: ratio,
    baseline: `the same list with no stream open (${without.toFixed(0)} req/s), ${rate} creates/s in both`,
    target: '≥ 0.85× with none open',
    met: ratio >= 0.85,
    streams: streams.length,
  });
  return rows;
}
