import autocannon from 'autocannon';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startNodeOptions } from '../start-options.ts';
import { startServer, type ServerProcess } from './child.ts';
import { openBenchDatabase } from './database.ts';
import { send } from './http.ts';
import { signIn } from './login.ts';
import type { ServiceSettings } from './protocol.ts';
import { BENCH_PASSWORD, type SeedInfo } from './seed.ts';
import { serverCpu, serverCpuSince } from './throughput.ts';

/**
 * The CPU one request of each common kind costs the service, split into the web process (its
 * JavaScript, the kernel's work for it) and PostgreSQL (every process of the embedded server), as
 * the scheduler counts their run time:
 *   node scripts/bench/request-cpu.ts [--requests N] [--rounds R] [--connections C] [--only KINDS]
 *     [--profile DIR] [--against TREE]
 * Kinds: a signed-in list, a read by id, a create, refusals (401 without a cookie, 403 without the
 * permission, 404 for an id nobody has, 422 for a bad query or body) and an admin page. Each
 * round sends N requests of every kind over C keep-alive connections and reads both processes' CPU
 * from /proc around them; the kinds' order turns each round. With --profile, the last round of each
 * kind is also profiled in the service (the inspector's Profiler, started and stopped around the
 * requests), DIR/<side>-<kind>.cpuprofile. With --against TREE (another checkout of the repository,
 * its node_modules in place), a second service is started from that tree's
 * scripts/bench/service.ts on the same database, and each kind is measured on both, alternating
 * (A B, then B A), so a change is compared in the same window.
 * CPU, not throughput: it may run beside other work, and says the load average it ran at.
 */
const arg = (name: string, fallback: string) => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1]!;
};
const requests = Number(arg('requests', '2000'));
const rounds = Number(arg('rounds', '3'));
const connections = Number(arg('connections', '8'));
const profileDir = arg('profile', '');
const only = arg('only', '');
const against = arg('against', '');

/**
 * CPU time a process has run so far, in milliseconds: the sum of its threads' run time as the
 * scheduler counts it in nanoseconds (/proc/<pid>/task/<tid>/schedstat), finer than /proc's stat
 * ticks of 10 ms, which a run of a few thousand cheap requests would round.
 */
const cpuMs = (pid: number): number => {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ', 1)[0]);
    } catch {
      // The thread ended while we looked.
    }
  }
  return ns / 1e6;
};

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

interface Kind {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  status: number;
  headers: Record<string, string>;
  body?: string;
}

function fire(port: number, kind: Kind, amount: number): Promise<{ ok: number; other: number }> {
  return new Promise((resolve, reject) => {
    let ok = 0;
    let other = 0;
    const instance = autocannon(
      {
        url: `http://127.0.0.1:${port}${kind.path}`,
        method: kind.method,
        headers: kind.headers,
        ...(kind.body !== undefined ? { body: kind.body, idReplacement: kind.body.includes('[<id>]') } : {}),
        connections,
        amount,
        timeout: 30,
      },
      (err) => (err ? reject(err) : resolve({ ok, other })),
    );
    instance.on('response', (_client: unknown, status: number) => {
      if (status === kind.status) ok += 1;
      else other += 1;
    });
  });
}

/** Signs in at the service's first tenant; the kinds of request, each checked once and warmed up. */
async function kindsOf(service: ServerProcess): Promise<Kind[]> {
  const seed = service.ready.seed as SeedInfo;
  const host = seed.tenants[0]!.host;
  const cookie = await signIn(service.port, host, seed.email, BENCH_PASSWORD);
  const json = { host, cookie, 'content-type': 'application/json' };
  const list = await send(service.port, {
    method: 'GET',
    path: '/api/v1/testkit/widgets?limit=20',
    host,
    headers: { cookie },
  });
  const id = (JSON.parse(list.body) as { items: { id: string }[] }).items[0]!.id;
  const widgets = '/api/v1/testkit/widgets';
  const all: Kind[] = [
    { name: 'list', method: 'GET', path: `${widgets}?limit=20`, status: 200, headers: { host, cookie } },
    { name: 'read', method: 'GET', path: `${widgets}/${id}`, status: 200, headers: { host, cookie } },
    {
      name: 'create',
      method: 'POST',
      path: widgets,
      status: 201,
      headers: json,
      body: '{"name":"rq-[<id>]","size":7,"color":"blue","note":"created by the benchmark"}',
    },
    { name: '401', method: 'GET', path: `${widgets}?limit=20`, status: 401, headers: { host } },
    { name: '403', method: 'GET', path: '/api/v1/task/tasks?limit=20', status: 403, headers: { host, cookie } },
    {
      name: '404',
      method: 'GET',
      path: `${widgets}/0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b`,
      status: 404,
      headers: { host, cookie },
    },
    { name: '422q', method: 'GET', path: `${widgets}?sort=colour&limit=20`, status: 422, headers: { host, cookie } },
    {
      name: '422b',
      method: 'POST',
      path: widgets,
      status: 422,
      headers: json,
      body: '{"name":"rq-[<id>]","size":"seven","color":"blue"}',
    },
    { name: 'admin', method: 'GET', path: '/admin/testkit/widgets', status: 200, headers: { host, cookie } },
  ];
  const kinds = all.filter((k) => !only || only.split(',').includes(k.name));
  for (const kind of kinds) {
    const first = await send(service.port, {
      method: kind.method,
      path: kind.path,
      host,
      headers: kind.headers,
      ...(kind.body ? { json: JSON.parse(kind.body.replace('[<id>]', `first-${service.name}`)) } : {}),
    });
    if (first.status !== kind.status)
      throw new Error(`${kind.name}: ${first.status} where ${kind.status} was expected: ${first.body.slice(0, 300)}`);
    await fire(service.port, kind, Math.min(500, requests));
  }
  return kinds;
}

async function main(): Promise<void> {
  console.log(`request-cpu: ${requests} requests × ${rounds} rounds, ${connections} connections, load ${load()}`);
  const db = await openBenchDatabase('');
  const filesDir = mkdtempSync(join(tmpdir(), 'tenantry-request-cpu-'));
  const settings: ServiceSettings = {
    databaseUrl: db.url,
    poolSize: 10,
    runId: '',
    rowsPerTenant: 10_000,
    notifications: 100,
    wrongPasswordAccounts: 1,
    filesDir,
    maxUploadBytes: 1024 * 1024,
  };
  const sides = [{ label: 'this', script: './service.ts' }];
  if (against)
    sides.push({ label: 'against', script: pathToFileURL(resolve(against, 'scripts/bench/service.ts')).href });
  const services: { label: string; service: ServerProcess; kinds: Kind[] }[] = [];
  try {
    for (const side of sides) {
      const runId = randomBytes(3).toString('hex');
      const service = await startServer(side.label, side.script, { ...settings, runId }, startNodeOptions('start'));
      const started = { label: side.label, service, kinds: [] as Kind[] };
      // Listed before its kinds are checked, so a refusal there still stops it.
      services.push(started);
      started.kinds = await kindsOf(service);
    }
    const names = services[0]!.kinds.map((k) => k.name);
    const figures = new Map<string, { web: number[]; pg: number[] }>();
    let turn = 0;
    for (let round = 0; round < rounds; round++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + round) % names.length]!;
        const order = turn++ % 2 === 0 ? services : [...services].reverse();
        for (const { label, service, kinds } of order) {
          const kind = kinds.find((x) => x.name === name)!;
          await service.ask({ type: 'drain' }, 'drained', 120_000);
          const profiling = profileDir !== '' && round === rounds - 1;
          if (profiling) await service.ask({ type: 'live-profile' }, 'live-profile', 10_000);
          const webBefore = cpuMs(service.pid);
          const pgBefore = serverCpu(db.postmasterPid!, cpuMs);
          const { ok, other } = await fire(service.port, kind, requests);
          const web = cpuMs(service.pid) - webBefore;
          const pg = serverCpuSince(pgBefore, serverCpu(db.postmasterPid!, cpuMs));
          if (profiling)
            await service.ask(
              { type: 'live-profile', write: join(profileDir, `${label}-${name}.cpuprofile`) },
              'live-profile',
              30_000,
            );
          if (other > 0) throw new Error(`${label} ${name}: ${other} answers other than ${kind.status}`);
          const key = `${name} ${label}`;
          const f = figures.get(key) ?? { web: [], pg: [] };
          f.web.push((1000 * web) / ok);
          f.pg.push((1000 * pg) / ok);
          figures.set(key, f);
          console.log(
            `  round ${round + 1} ${key.padEnd(14)} web ${((1000 * web) / ok).toFixed(0).padStart(5)} µs, ` +
              `PostgreSQL ${((1000 * pg) / ok).toFixed(0).padStart(5)} µs per request (load ${load()})`,
          );
        }
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log('kind side        web µs  PostgreSQL µs  (means over the rounds; each round: web µs)');
    for (const [key, f] of [...figures].sort(([a], [b]) => a.localeCompare(b)))
      console.log(
        `${key.padEnd(14)}  ${mean(f.web).toFixed(0).padStart(6)}  ${mean(f.pg).toFixed(0).padStart(13)}` +
          `  (${f.web.map((w) => w.toFixed(0)).join(', ')})`,
      );
    console.log(`load average at the end ${load()}`);
  } finally {
    await Promise.allSettled(services.map(({ service }) => service.stop()));
    await db.stop();
    rmSync(filesDir, { recursive: true, force: true });
  }
}

await main();
