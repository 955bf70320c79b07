import { fork, type ChildProcess } from 'node:child_process';
import { setPriority } from 'node:os';
import { readFileSync } from 'node:fs';
import { serverCpu, serverCpuSince } from './throughput.ts';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { send } from './http.ts';
import type { ServerProcess } from './child.ts';
import type { LiveStats, LiveTenant } from './protocol.ts';
import type { ResultRow } from './report.ts';
import { measureStatements } from './live-statements.ts';
import type { ReaderAnswer, ReaderRequest, ReaderStream } from './live-readers.ts';

/**
 * Issue 45, point 9: live streams under load, as the issue states it: 1,000 open streams on one
 * tenant plus 1,000 spread over 100 tenants, while 200 creates/s are committed. Streams of the
 * widget list are opened on the bench tenant, 10, then 100, then 1,000 (the service's sessions:
 * live.max_streams_per_caller each), then 10 more on each of 100 other tenants; at each step
 * creates are committed at a fixed rate (open loop, 200/s) for a while: on the bench tenant alone
 * while it has the only streams, and at the last step every other create in one of the 100
 * tenants, in turn. Reported per step:
 *   - commit→delivery p50 and p99: on a sample of the streams (10 of the bench tenant's, and one
 *     in each of 10 of the other tenants), the arrival of a widget's created event minus its row's
 *     createdAt (the transaction's time: a bound from above of its commit);
 *   - the database statements per live batch, counted on the service's driver (live-service.ts):
 *     they must not grow with the number of streams;
 *   - the web process's RSS, and its CPU time per second of the step.
 * Then the list's throughput with every stream open beside it, over the same list with none open,
 * all while the creates run (target ≥ 0.85×), in rounds (--rounds): each a phase beside the streams
 * and one with none open, next to each other, the streams closed and the same set opened again
 * between them, the order turned every other round; the ratio is the rounds' total, each round's
 * printed (one phase of each, or phases minutes apart, let the machine's drift decide the ratio).
 * The list with none open before the first stream opens is measured and printed too, not in the
 * ratio: the process has just started, and spends more CPU per request then than later.
 * The streams are read in a process of their own (live-readers.ts): every stream is read, only
 * the sampled ones are parsed.
 */

const LIST = '/api/v1/testkit/widgets';
const STREAM = `${LIST}/stream?fields=name,createdAt`;
/** Streams of the bench tenant whose events are timed; the others are read and only counted. */
const SAMPLED = 10;
/** Of the spread tenants, this many have one stream timed. */
const SAMPLED_TENANTS = 10;
const PER_SESSION = 10;
const LIST_CONNECTIONS = 8;

/** The stream clients' process. */
function startReaders(nice: number): {
  ask: (request: ReaderRequest, timeoutMs: number) => Promise<ReaderAnswer>;
  child: ChildProcess;
} {
  const child = fork(fileURLToPath(new URL('./live-readers.ts', import.meta.url)), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  if (nice > 0 && child.pid !== undefined) setPriority(child.pid, nice);
  const ask = (request: ReaderRequest, timeoutMs: number) =>
    new Promise<ReaderAnswer>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the stream readers did not answer ${request.type}`)), timeoutMs);
      child.once('message', (answer: ReaderAnswer) => {
        clearTimeout(timer);
        if (answer.type === 'failed') reject(new Error(`the stream readers failed: ${answer.error}`));
        else resolve(answer);
      });
      child.send(request);
    });
  return { ask, child };
}

/** CPU time (user + system) of a process so far, ms. */
const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime are the 14th and 15th fields of the line, the 12th and 13th after the command.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};

const rssMib = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
};

const percentile = (sorted: readonly number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

/**
 * A connection the other side reset, or refused while its listen queue overflowed: what an
 * overloaded machine does to new connections (the kernel logs "SYN flooding" on the port).
 */
const isReset = (err: unknown): boolean => {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ECONNRESET' || code === 'ECONNREFUSED';
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates at `rate` per second for `seconds` (open loop): each leaves on time whatever the earlier ones do. */
async function createAtRate(
  port: number,
  target: (n: number) => { host: string; cookie: string },
  tag: string,
  rate: number,
  seconds: number,
): Promise<{ names: Map<string, string[]>; refused: number }> {
  const names = new Map<string, string[]>();
  let refused = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now();
  const count = Math.round(rate * seconds);
  for (let n = 0; n < count; n++) {
    const wait = start + (n * 1000) / rate - performance.now();
    if (wait > 0.5) await sleep(wait);
    const name = `live-${tag}-${n}`;
    const { host, cookie } = target(n);
    pending.push(
      send(port, {
        method: 'POST',
        path: LIST,
        host,
        headers: { cookie },
        json: { name, size: 1, color: 'blue', note: 'created by the live bench' },
      }).then(
        (answer) => {
          // The service shedding load (every connection busy) is counted and reported, not a failure of the run.
          // A 408 is the same on a machine too loaded to read the request in time.
          if (answer.status === 503 || answer.status === 408) {
            refused++;
            return;
          }
          if (answer.status !== 201) throw new Error(`a create answered ${answer.status}: ${answer.body}`);
          const ofHost = names.get(host);
          if (ofHost) ofHost.push(name);
          else names.set(host, [name]);
        },
        (err: unknown) => {
          // A connection reset before its answer (an overloaded machine's listen queue overflowing):
          // counted with the refusals; the row may or may not exist, so it is not timed.
          if (!isReset(err)) throw err;
          refused++;
        },
      ),
    );
  }
  await Promise.all(pending);
  return { names, refused };
}

/** CPU time (user + system) of the whole machine so far, ms: every process's, from /proc/stat. */
const machineCpuMs = (): number => {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait, in clock ticks of 10 ms.
  const [user, nice, system, , , irq, softirq, steal] = fields as [number, ...number[]];
  return (user + nice! + system! + irq! + softirq! + steal!) * 10;
};

/** The processes of the live scenario whose CPU time the list phases account for. */
interface Accounted {
  web: number;
  service: number;
  readers: number | undefined;
  postmaster: number | undefined;
}

/** CPU-seconds each process (and PostgreSQL's, summed over its processes) used while `work` ran. */
async function accountCpu<T>(
  pids: Accounted,
  work: () => Promise<T>,
): Promise<{
  result: T;
  /** Wall seconds of the work: on an overloaded machine the creates' answers outlast their schedule. */
  wall: number;
  cpu: Record<'web' | 'postgres' | 'service' | 'readers' | 'bench' | 'machine', number>;
}> {
  const safe = (pid: number | undefined) => {
    if (pid === undefined) return 0;
    try {
      return cpuMs(pid);
    } catch {
      return 0;
    }
  };
  const pg0 = pids.postmaster ? serverCpu(pids.postmaster) : undefined;
  const before = { web: safe(pids.web), service: safe(pids.service), readers: safe(pids.readers) };
  const bench0 = process.cpuUsage();
  const machine0 = machineCpuMs();
  const started = performance.now();
  const result = await work();
  const wall = (performance.now() - started) / 1000;
  const benchUsed = process.cpuUsage(bench0);
  const seconds = (ms: number) => ms / 1000;
  return {
    result,
    wall,
    cpu: {
      web: seconds(safe(pids.web) - before.web),
      service: seconds(safe(pids.service) - before.service),
      readers: seconds(safe(pids.readers) - before.readers),
      postgres: pg0 && pids.postmaster ? seconds(serverCpuSince(pg0, serverCpu(pids.postmaster))) : Number.NaN,
      bench: (benchUsed.user + benchUsed.system) / 1e6,
      machine: seconds(machineCpuMs() - machine0),
    },
  };
}

/** List requests on `connections` loops for `seconds`: requests per second answered 200. */
async function listThroughput(port: number, host: string, cookie: string, seconds: number): Promise<number> {
  const until = performance.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: LIST_CONNECTIONS }, async () => {
      while (performance.now() < until) {
        const answer = await send(port, { method: 'GET', path: `${LIST}?limit=20`, host, headers: { cookie } }).catch(
          (err: unknown) => {
            if (isReset(err)) return undefined;
            throw err;
          },
        );
        // A reset connection, a 503 with every database connection busy or a 408 (an overloaded
        // machine) answers no list: not counted.
        if (answer === undefined || answer.status === 503 || answer.status === 408) continue;
        if (answer.status !== 200) throw new Error(`the list answered ${answer.status}`);
        done++;
      }
    }),
  );
  return done / seconds;
}

interface Step {
  /** Streams on the bench tenant, and on the spread tenants together. */
  busy: number;
  spread: number;
}

export async function measureLiveGroup(options: {
  /** The web process measured, and the process that makes the sessions and tenants (the run's service). */
  service: ServerProcess;
  seeder: ServerProcess;
  host: string;
  cookie: string;
  counts: readonly number[];
  /** Tenants the last step spreads PER_SESSION streams each over (0: no such step). */
  tenants: number;
  rate: number;
  seconds: number;
  /** The stream readers' CPU priority (nice): 0 as the rest of the run, 19 to give way to it. */
  readersNice: number;
  /** Rounds of the list's measurement: a phase beside the streams and one with none open in each. */
  rounds: number;
  /** The embedded PostgreSQL's postmaster: its processes' CPU is accounted in the list phases (none: not shown). */
  postmasterPid?: number | undefined;
  /** With pg_stat_statements loaded in that server: the creates-alone phase is broken down per create (live-statements.ts). */
  statementsUrl?: string | undefined;
  log: (line: string) => void;
}): Promise<ResultRow[]> {
  const { service, host, cookie, log, rate, seconds } = options;
  const port = service.port;
  const most = Math.max(...options.counts);
  const { cookies } = await options.seeder.ask(
    { type: 'live-sessions', count: Math.ceil(most / PER_SESSION) },
    'live-sessions',
    60_000,
  );
  const { tenants: spread } =
    options.tenants > 0
      ? await options.seeder.ask({ type: 'live-tenants', count: options.tenants, sessions: 1 }, 'live-tenants', 300_000)
      : { tenants: [] as LiveTenant[] };
  const stats = async (): Promise<LiveStats> => (await service.ask({ type: 'live-stats' }, 'live-stats', 10_000)).stats;
  await stats();
  const readers = startReaders(options.readersNice);
  if (options.readersNice > 0) log(`  stream readers at nice ${options.readersNice}`);
  const rows: ResultRow[] = [];
  try {
    await sleep(1000);
    const idleRss = rssMib(service.pid);
    const idle = (await stats()).memory!;
    log(
      `  web process RSS before any stream opens: ${idleRss.toFixed(0)} MiB (heap ${(idle.heapUsed / 1048576).toFixed(0)} of ${(idle.heapTotal / 1048576).toFixed(0)} MiB, external ${(idle.external / 1048576).toFixed(0)} MiB)`,
    );
    const steps: Step[] = options.counts.map((busy) => ({ busy, spread: 0 }));
    if (spread.length > 0) steps.push({ busy: most, spread: spread.length * PER_SESSION });
    const bench = { host, cookie };
    // Creates on the bench tenant alone, or, with the spread tenants' streams open, every other one in one of them.
    const targets = (withSpread: boolean) => (n: number) =>
      withSpread && n % 2 === 1
        ? { host: spread[(n >> 1) % spread.length]!.host, cookie: spread[(n >> 1) % spread.length]!.cookies[0]! }
        : bench;
    // The list's phases: with the streams open, and with none, the creates running in all.
    const listSeconds = Math.max(3, Math.min(seconds, 10));
    // Each phase runs the creates for listSeconds + 1 s; the list phases run the list beside them.
    const phase = async (tag: string, list: boolean, readersPid: number | undefined) => {
      const pids = {
        web: service.pid,
        service: options.seeder.pid,
        readers: readersPid,
        postmaster: options.postmasterPid,
      };
      const batchesBefore = (await stats()).batches;
      const { result, cpu, wall } = await accountCpu(pids, async () => {
        const creates = createAtRate(port, targets(spread.length > 0), tag, rate, listSeconds + 1);
        const rps = list ? await listThroughput(port, host, cookie, listSeconds) : 0;
        const { names, refused } = await creates;
        return { rps, refused, created: [...names.values()].reduce((sum, n) => sum + n.length, 0) };
      });
      if (result.refused > 0)
        log(
          `  (${result.refused} creates refused in a list phase: 503 with every connection busy, or the connection reset)`,
        );
      const { loop, batches } = await stats();
      return {
        rps: result.rps,
        cpu,
        wall,
        requests: result.rps * listSeconds,
        loop,
        created: result.created,
        batches: batches - batchesBefore,
      };
    };
    const stamp = () => Date.now().toString(36);
    // The list with none open before any stream opens: printed, and its CPU accounted, but not in
    // the ratio (the rounds below): the process has just started, and spends more per request.
    const noneBefore = await phase(`list-before-${stamp()}`, true, undefined);
    log(`  list with no stream open yet: ${noneBefore.rps.toFixed(0)} req/s`);
    let busyOpen = 0;
    let spreadOpen = 0;
    // Every stream opened so far: the rounds below close them and open the same set again.
    const opened: ReaderStream[] = [];
    const openStreams = async (streams: ReaderStream[]) => {
      await readers.ask({ type: 'open', port, path: STREAM, streams }, 300_000);
      opened.push(...streams);
      await sleep(1000);
      await readers.ask({ type: 'collect', created: [], timeoutMs: 0 }, 10_000);
    };
    for (const step of steps) {
      const opening: ReaderStream[] = [];
      for (; busyOpen < step.busy; busyOpen++)
        opening.push({ host, cookie: cookies[Math.floor(busyOpen / PER_SESSION)]!, sampled: busyOpen < SAMPLED });
      for (; spreadOpen < step.spread; spreadOpen++) {
        const tenant = Math.floor(spreadOpen / PER_SESSION);
        opening.push({
          host: spread[tenant]!.host,
          cookie: spread[tenant]!.cookies[0]!,
          sampled: spreadOpen % PER_SESSION === 0 && tenant < SAMPLED_TENANTS,
        });
      }
      await openStreams(opening);
      const before = await stats();
      const cpuBefore = cpuMs(service.pid);
      const started = performance.now();
      const tag = `${step.busy}-${step.spread}-${Date.now().toString(36)}`;
      const { names, refused } = await createAtRate(port, targets(step.spread > 0), tag, rate, seconds);
      const stepSeconds = (performance.now() - started) / 1000;
      const cpu = cpuMs(service.pid) - cpuBefore;
      // Every sampled stream has received every create of its tenant, or 10 s have passed.
      const collected = await readers.ask(
        { type: 'collect', created: [...names].map(([h, n]) => ({ host: h, names: n })), timeoutMs: 10_000 },
        20_000,
      );
      if (collected.type !== 'collected') throw new Error('the stream readers answered out of turn');
      const after = await stats();
      const mib = (n: number) => (n / 1048576).toFixed(0);
      const memory = after.memory!;
      log(
        `    its memory: heap ${mib(memory.heapUsed)} of ${mib(memory.heapTotal)} MiB, external ${mib(memory.external)} MiB (array buffers ${mib(memory.arrayBuffers)})`,
      );
      const { latencies, missing } = collected;
      if (latencies.length === 0)
        throw new Error(`live: no created event reached the ${collected.sampled} sampled streams`);
      latencies.sort((a, b) => a - b);
      const batches = after.batches - before.batches;
      const perBatch = batches > 0 ? (after.statements - before.statements) / batches : Number.NaN;
      const rss = rssMib(service.pid);
      const p99 = percentile(latencies, 99);
      const streams = step.busy + step.spread;
      const creates = [...names.values()].reduce((sum, n) => sum + n.length, 0);
      const label = step.spread > 0 ? `${step.busy} + ${step.spread} over ${spread.length} tenants` : `${step.busy}`;
      log(
        `  ${label} streams, ${creates} creates at ${rate}/s${refused > 0 ? ` (${refused} more refused: 503 with every connection busy, or the connection reset)` : ''}: commit→delivery p50 ${percentile(latencies, 50)} ms, p99 ${p99} ms` +
          ` (${latencies.length} deliveries timed on ${collected.sampled} streams, ${missing} missing); ${batches} batches,` +
          ` ${perBatch.toFixed(2)} statements each; web process RSS ${rss.toFixed(0)} MiB, CPU ${((cpu / 1000 / stepSeconds) * 100).toFixed(0)} %;` +
          ` readers: ${(collected.bytes / 1048576).toFixed(1)} MiB read, CPU ${((collected.cpuMs / 1000 / stepSeconds) * 100).toFixed(0)} %, ${collected.ended} streams ended`,
      );
      rows.push({
        name: step.spread > 0 ? `live-${step.busy}-plus-${step.spread}-streams` : `live-${step.busy}-streams`,
        rps: null,
        p50_ms: percentile(latencies, 50),
        p99_ms: p99,
        ratio_to_baseline: null,
        target: 'p99 ≤ 250 ms, RSS < 300 MiB, statements per batch flat',
        met: p99 <= 250 && rss < 300 && missing === 0 && collected.ended === 0 && refused === 0,
        refused,
        samples: latencies.length,
        streams,
        statements_per_batch: perBatch,
        batches,
        rss_mib: rss,
        rss_growth_mib: rss - idleRss,
        cpu_percent: (cpu / 1000 / stepSeconds) * 100,
        rate,
      });
    }
    const perBatch = rows.map((r) => r.statements_per_batch!);
    // Flat: a batch costs the same statements however many streams are open.
    const flat = Math.max(...perBatch) === Math.min(...perBatch);
    log(
      `  statements per batch at ${rows.map((r) => r.streams).join(', ')} streams: ${perBatch.join(', ')} (${flat ? 'flat' : 'NOT flat'})`,
    );
    for (const row of rows) row.met = row.met! && flat;

    // The list's rounds. Each round is a phase beside the open streams and one with none open,
    // next to each other (a close or an opening of the streams between them, outside both), the
    // order turned every other round (beside, none | none, beside | beside, none ...), so that a
    // machine drifting over the minutes of the rounds weighs on both conditions alike: with one
    // phase each, a drift of a few per cent decided the ratio. The ratio is the rounds' total (every
    // request answered beside the streams over every one with none), each round's printed beside it.
    type Phase = Awaited<ReturnType<typeof phase>>;
    const open = busyOpen + spreadOpen;
    let streamsUp = true;
    const setStreams = async (up: boolean) => {
      if (up === streamsUp) return;
      streamsUp = up;
      if (!up) {
        await readers.ask({ type: 'close' }, 30_000);
        await sleep(1000);
        return;
      }
      const reopened = await readers.ask({ type: 'open', port, path: STREAM, streams: opened }, 300_000);
      if (reopened.type !== 'opened' || reopened.open !== open)
        throw new Error(`live: ${open} streams to open again, the readers hold ${JSON.stringify(reopened)}`);
      await sleep(1000);
      await readers.ask({ type: 'collect', created: [], timeoutMs: 0 }, 10_000);
    };
    const rounds: { with: Phase; none: Phase }[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const measure = async (up: boolean) => {
        await setStreams(up);
        const tag = `list-${up ? 'with' : 'none'}-${round}-${stamp()}`;
        // TENANTRY_BENCH_LIVE_PROFILE=DIR: the web process's CPU profile of the first round's two phases, one file each.
        const profile = round === 0 ? process.env.TENANTRY_BENCH_LIVE_PROFILE : undefined;
        if (profile) await service.ask({ type: 'live-profile' }, 'live-profile', 10_000);
        const measured = await phase(tag, true, up ? readers.child.pid : undefined);
        if (profile) {
          const write = join(profile, `live-web-${up ? 'with' : 'none'}-${Date.now()}.cpuprofile`);
          await service.ask({ type: 'live-profile', write }, 'live-profile', 60_000);
          log(`  (the web process's profile of that phase: ${write})`);
        }
        return measured;
      };
      if (round % 2 === 0) {
        const withStreams = await measure(true);
        rounds.push({ with: withStreams, none: await measure(false) });
      } else {
        const none = await measure(false);
        rounds.push({ none, with: await measure(true) });
      }
    }
    // The accounting's phases without the list: the streams alone, then (closed) the creates alone.
    await setStreams(true);
    const streamsAlone = await phase(`streams-alone-${stamp()}`, false, readers.child.pid);
    await setStreams(false);
    const statements =
      options.statementsUrl && options.postmasterPid
        ? await measureStatements(options.statementsUrl, options.postmasterPid)
        : undefined;
    const createsAlone = await phase(`creates-alone-${stamp()}`, false, undefined);
    if (statements) {
      log(`  PostgreSQL's work in the creates-alone phase (pg_stat_statements loaded, which costs some CPU itself):`);
      for (const line of await statements.finish(createsAlone.created, createsAlone.wall)) log(line);
    }

    const total = (phases: Phase[]): Phase => ({
      rps: phases.reduce((sum, p) => sum + p.rps, 0) / phases.length,
      wall: phases.reduce((sum, p) => sum + p.wall, 0),
      requests: phases.reduce((sum, p) => sum + p.requests, 0),
      batches: phases.reduce((sum, p) => sum + p.batches, 0),
      cpu: Object.fromEntries(
        Object.keys(phases[0]!.cpu).map((k) => [k, phases.reduce((sum, p) => sum + p.cpu[k as keyof Phase['cpu']], 0)]),
      ) as Phase['cpu'],
      loop: undefined,
      created: phases.reduce((sum, p) => sum + p.created, 0),
    });
    const withStreams = total(rounds.map((r) => r.with));
    const without = total(rounds.map((r) => r.none));
    const ratio = withStreams.requests / without.requests;
    const ratios = rounds.map((r) => r.with.rps / r.none.rps);
    const median = [...ratios].sort((a, b) => a - b)[Math.floor(ratios.length / 2)]!;
    const rps = (phases: Phase[]) => phases.map((p) => p.rps.toFixed(0)).join(', ');
    log(
      `  list beside ${open} open streams: ${withStreams.rps.toFixed(0)} req/s over ${rounds.length} rounds (${rps(rounds.map((r) => r.with))}); with none open ${without.rps.toFixed(0)} req/s (${rps(rounds.map((r) => r.none))}):` +
        ` ${ratio.toFixed(3)}× over the rounds (each ${ratios.map((r) => r.toFixed(3)).join(', ')}; median ${median.toFixed(3)}); ${noneBefore.rps.toFixed(0)} req/s with none before the streams opened (not in the ratio)`,
    );
    // The phases with none open differ by more than a fifth: the machine changed under the rounds
    // (other work started or stopped), and their ratio is not a figure of the code.
    const nones = rounds.map((r) => r.none.rps);
    const drift = Math.max(...nones) / Math.min(...nones) - 1;
    if (drift > 0.2)
      log(
        `  the list with none open moved by ${(drift * 100).toFixed(0)} % between the rounds: the machine changed during the run, the ratio is not a figure of the code`,
      );
    // Where the machine's CPU went (CPU-seconds, user + system, from /proc): each process over each
    // phase of listSeconds + 1 s, all with the creates running; then what the streams cost a second
    // (streams alone less creates alone), and what a list request costs beside them and with none
    // (the rounds' list phases less the same phase without the list, per request answered). Per
    // request is robust on a loaded machine, where req/s is not. "other": the machine's processes
    // not of this run.
    const parts = ['web', 'postgres', 'service', 'readers', 'bench'] as const;
    const other = (p: Phase) =>
      p.cpu.machine - parts.reduce((sum, k) => sum + (Number.isNaN(p.cpu[k]) ? 0 : p.cpu[k]), 0);
    const line = (values: (k: (typeof parts)[number]) => number, digits: number, unit: string) =>
      `${parts.map((k) => `${k} ${values(k).toFixed(digits)}`).join(', ')} ${unit}`;
    for (const [label, p] of [
      ...rounds.flatMap((r, i) =>
        (i % 2 === 0 ? (['with', 'none'] as const) : (['none', 'with'] as const)).map(
          (which) => [`round ${i + 1}, list with ${which === 'with' ? `${open} streams` : 'none'}`, r[which]] as const,
        ),
      ),
      [`${open} streams, no list`, streamsAlone] as const,
      ['creates alone', createsAlone] as const,
      ['list with none, before the streams', noneBefore] as const,
    ])
      log(
        `    CPU, ${label}, ${p.wall.toFixed(1)} s: ${line((k) => p.cpu[k], 2, 's')}; other processes ${other(p).toFixed(2)} s${p.requests > 0 ? ` (${p.requests.toFixed(0)} list requests)` : ''}; ${p.batches} live batches` +
          (p.loop
            ? `; web event loop ${(p.loop.utilization * 100).toFixed(0)} % busy, delay p50 ${p.loop.delayP50Ms.toFixed(1)} / p99 ${p.loop.delayP99Ms.toFixed(1)} / max ${p.loop.delayMaxMs.toFixed(1)} ms`
            : ''),
      );
    log(
      `    the streams cost: ${line((k) => streamsAlone.cpu[k] / streamsAlone.wall - createsAlone.cpu[k] / createsAlone.wall, 3, 'CPU-s per s')}`,
    );
    const perRequest = (list: Phase, base: Phase) => (k: (typeof parts)[number]) =>
      // The base phase's rate over the list phases' wall time: what the same phases without the list would have used.
      ((list.cpu[k] - (base.cpu[k] * list.wall) / base.wall) * 1000) / list.requests;
    log(`    a list request beside the streams: ${line(perRequest(withStreams, streamsAlone), 2, 'CPU-ms')}`);
    log(`    a list request with none open:     ${line(perRequest(without, createsAlone), 2, 'CPU-ms')}`);
    const msPerRequest = (p: Phase) =>
      Object.fromEntries(
        [...parts, 'machine' as const].map((k) => [k, Number(((p.cpu[k] * 1000) / p.requests).toFixed(3))]),
      );
    rows.push({
      name: `live-list-beside-${open}-streams`,
      rps: withStreams.rps,
      p50_ms: null,
      p99_ms: null,
      ratio_to_baseline: ratio,
      baseline: `the same list with no stream open, in ${rounds.length} rounds alternating with the list beside the streams (${rps(rounds.map((r) => r.none))} req/s), ${rate} creates/s in all`,
      target: '≥ 0.85× with none open',
      met: ratio >= 0.85,
      streams: open,
      rounds: rounds.map((r, i) => ({
        with_rps: Number(r.with.rps.toFixed(0)),
        none_rps: Number(r.none.rps.toFixed(0)),
        ratio: Number(ratios[i]!.toFixed(3)),
      })),
      cpu_ms_per_request: { with_streams: msPerRequest(withStreams), with_none: msPerRequest(without) },
    });
  } finally {
    readers.child.kill();
  }
  return rows;
}
