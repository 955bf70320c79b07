import { parseArgs } from 'node:util';

export const SCENARIOS = [
  'list',
  'create',
  'health',
  'public',
  'notifications',
  'open-loop',
  'list-size',
  'list-filtered',
  'outbox',
  'login',
  'login-refusals',
  'upload',
  'upload-s3',
  'drivers',
  'webhooks',
  'tenants',
  'metrics-cost',
  'plan-cost',
  'history',
  'batch',
  'prepared-statements',
  'live',
] as const;
export type ScenarioGroup = (typeof SCENARIOS)[number];
/**
 * Groups a run without --only leaves out: the tenants scenario seeds 10,000 tenants and takes its
 * own time; prepared-statements measures a setting for poolers, not the service as shipped; live
 * holds a thousand streams open and takes its own time too.
 */
const ON_REQUEST: readonly ScenarioGroup[] = ['tenants', 'prepared-statements', 'live'];

export interface BenchOptions {
  quick: boolean;
  /** Empty: an embedded PostgreSQL in a temporary directory, started and removed by the run. */
  databaseUrl: string;
  connections: number;
  warmupSeconds: number;
  /** Seconds per round of each throughput scenario; the service and its baseline alternate each round. */
  seconds: number;
  rounds: number;
  poolSize: number;
  /** Widgets seeded per tenant, then the first tenant's widgets grown to each further size for the list again. */
  rows: number[];
  rowsPerTenant: number;
  /** Tasks seeded in the first tenant for the list-filtered scenario (default: the largest of rows). */
  tasks: number;
  /** Notifications seeded for the signed-in bench user (the owner-scoped list). */
  notifications: number;
  /** Seconds per side of the open-loop run (at half the bare baseline's measured list peak). */
  openLoopSeconds: number;
  /** Seconds of successful logins for the login throughput. */
  loginSeconds: number;
  outboxEvents: number;
  /** Events per second published for the outbox latency measurement. */
  outboxRate: number;
  hashSamples: number;
  loginSamples: number;
  /** Size of one upload of the upload scenario, in MiB (the RSS target is for 1024). */
  uploadMib: number;
  /** Task creates per phase of the webhooks scenario, and the rate of its latency phase (per second). */
  webhookEvents: number;
  webhookRate: number;
  /** Live scenario: the stream counts, ascending, and the creates per second committed at each. */
  liveStreams: number[];
  liveRate: number;
  /** Tenants the live scenario's last step spreads 10 streams each over (0: none). */
  liveTenants: number;
  /**
   * The CPU priority (nice, 0-19) of the live scenario's stream readers, which stand for clients on
   * other machines: at 19 they take only what the service, PostgreSQL and the list's load leave.
   */
  liveReadersNice: number;
  /**
   * Load pg_stat_statements into the embedded server and break the live scenario's creates-alone
   * phase down into PostgreSQL's statements, WAL and processes per create (it costs the server
   * some CPU of its own, so runs measured for throughput leave it off).
   */
  liveStatements: boolean;
  /** Tenant counts the tenants scenario seeds and measures, ascending. */
  tenantSizes: number[];
  only: ReadonlySet<ScenarioGroup>;
  out: string;
  /**
   * The bench tenant on a plan with every feature and a bound on every limit (issue 47): its
   * requests then resolve a subscription and a plan in the opening statement. Compare the list and
   * create ratios of a run with it against a run without (target ≥ 0.95×).
   */
  plan: boolean;
  /** Directory for V8 CPU profiles (node --cpu-prof): the service's in it, the baseline's in its `baseline` folder; or empty. */
  cpuProfDir: string;
}

const USAGE = `usage: npm run bench -- [options]
  --quick                 short run (about two minutes): one round of 3 s per scenario, lists at 10000 rows
  --database-url URL      benchmark on this database (default: TENANTRY_DATABASE_URL, else an embedded server)
  --connections N         concurrent connections for the throughput scenarios (default 64)
  --seconds N             seconds per round of each throughput scenario (default 10)
  --rounds N              rounds; the service and its baseline alternate within each (default 3)
  --warmup N              warm-up seconds per scenario (default 3)
  --pool-size N           database pool size of the service and of the baseline (default 10)
  --rows N[,N...]         widgets per tenant, then the first tenant grown to each further size and
                          the list measured again (default 10000,1000000; --quick 10000)
  --tasks N               tasks seeded for the list-filtered scenario (default: the largest --rows size)
  --notifications N       notifications seeded for the signed-in user (default 10000)
  --outbox-rate N         events per second for the outbox latency (default 100)
  --upload-mib N          size of one upload of the upload scenario in MiB (default 1024; --quick 256)
  --webhook-events N      task creates per phase of the webhooks scenario (default 1000; --quick 300)
  --webhook-rate N        creates per second of its latency phase (default 5)
  --live-streams N[,N...] open streams of the live scenario, ascending (default 10,100,1000)
  --live-rate N           creates per second committed beside them (default 200)
  --live-tenants N        tenants the last step opens 10 more streams on each (default 100; 0: none)
  --live-readers-nice N   CPU priority (nice 0-19) of the process reading the streams (default 0)
  --live-statements       PostgreSQL's statements, WAL and processes per create of the live scenario's
                          creates-alone phase (loads pg_stat_statements into the embedded server)
  --tenant-sizes N[,N...] tenant counts of the tenants scenario, ascending (default 100,1000,10000)
  --only a,b              run only these groups: ${SCENARIOS.join(', ')} (all but tenants, prepared-statements and live by default)
  --out FILE              results file (default bench-results.json)
  --plan                  put the bench tenant on a plan with features and limits (compare with a run without)
  --cpu-prof DIR          write a V8 CPU profile of the service process into DIR, and the baseline's into DIR/baseline`;

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`--${name} must be a positive integer (got ${raw})\n${USAGE}`);
  return value;
}

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      'database-url': { type: 'string' },
      connections: { type: 'string' },
      seconds: { type: 'string' },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      'pool-size': { type: 'string' },
      rows: { type: 'string' },
      notifications: { type: 'string' },
      tasks: { type: 'string' },
      'outbox-rate': { type: 'string' },
      'upload-mib': { type: 'string' },
      'webhook-events': { type: 'string' },
      'webhook-rate': { type: 'string' },
      'live-streams': { type: 'string' },
      'live-rate': { type: 'string' },
      'live-tenants': { type: 'string' },
      'live-readers-nice': { type: 'string' },
      'live-statements': { type: 'boolean', default: false },
      'tenant-sizes': { type: 'string' },
      only: { type: 'string' },
      out: { type: 'string', default: 'bench-results.json' },
      'cpu-prof': { type: 'string' },
      plan: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const quick = values.quick ?? false;
  const only = new Set<ScenarioGroup>();
  for (const name of (values.only ?? SCENARIOS.filter((s) => !ON_REQUEST.includes(s)).join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`--only: unknown group ${name}\n${USAGE}`);
    only.add(name as ScenarioGroup);
  }
  const rows = (values.rows ?? (quick ? '10000' : '10000,1000000'))
    .split(',')
    .map((n) => positiveInt('rows', n.trim(), 0));
  if (rows.some((n, i) => i > 0 && n <= rows[i - 1]!))
    throw new Error(`--rows: sizes grow from one to the next (got ${values.rows})\n${USAGE}`);
  const tenantSizes = (values['tenant-sizes'] ?? '100,1000,10000')
    .split(',')
    .map((n) => positiveInt('tenant-sizes', n.trim(), 0));
  if (tenantSizes.some((n, i) => i > 0 && n <= tenantSizes[i - 1]!))
    throw new Error(`--tenant-sizes: sizes grow from one to the next (got ${values['tenant-sizes']})\n${USAGE}`);
  return {
    quick,
    databaseUrl: values['database-url'] ?? env.TENANTRY_DATABASE_URL ?? '',
    connections: positiveInt('connections', values.connections, 64),
    seconds: positiveInt('seconds', values.seconds, quick ? 3 : 10),
    rounds: positiveInt('rounds', values.rounds, quick ? 1 : 3),
    warmupSeconds: positiveInt('warmup', values.warmup, quick ? 1 : 3),
    poolSize: positiveInt('pool-size', values['pool-size'], 10),
    rows,
    rowsPerTenant: rows[0]!,
    tasks: positiveInt('tasks', values.tasks, rows.at(-1)!),
    notifications: positiveInt('notifications', values.notifications, 10_000),
    openLoopSeconds: quick ? 5 : 15,
    loginSeconds: quick ? 3 : 10,
    outboxEvents: quick ? 1000 : 2000,
    outboxRate: positiveInt('outbox-rate', values['outbox-rate'], 100),
    hashSamples: quick ? 10 : 40,
    loginSamples: quick ? 16 : 60,
    uploadMib: positiveInt('upload-mib', values['upload-mib'], quick ? 256 : 1024),
    webhookEvents: positiveInt('webhook-events', values['webhook-events'], quick ? 300 : 1000),
    webhookRate: positiveInt('webhook-rate', values['webhook-rate'], 5),
    liveStreams: (values['live-streams'] ?? '10,100,1000').split(',').map((n) => positiveInt('live-streams', n, 10)),
    liveRate: positiveInt('live-rate', values['live-rate'], 200),
    liveTenants: values['live-tenants'] === '0' ? 0 : positiveInt('live-tenants', values['live-tenants'], 100),
    liveReadersNice:
      values['live-readers-nice'] === undefined || values['live-readers-nice'] === '0'
        ? 0
        : Math.min(19, positiveInt('live-readers-nice', values['live-readers-nice'], 0)),
    liveStatements: values['live-statements'] ?? false,
    tenantSizes,
    only,
    out: values.out ?? 'bench-results.json',
    cpuProfDir: values['cpu-prof'] ?? '',
    plan: values.plan ?? false,
  };
}
