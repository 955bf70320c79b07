/**
 * npm run job -- <name> [--at <ISO time>] [--tenant <slug>] [--config config.yaml]
 *
 * Runs one declared job once, in this process, now, or as if the clock read --at (every time the
 * job compares with, in its transactions too, is then that time, running on from it). A per-tenant
 * job runs for every served tenant in turn, or for the one --tenant names. Prints one line per
 * tenant: ok with the run's summary, or failed with its error. No queue and no retry: a failed
 * run is reported, and the command exits 1. Exits 2 on a usage error (unknown job or tenant, bad
 * time). Works whether or not the service is running, like admin:invite.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../framework/config/load.ts';
import type { Config } from '../framework/config/schema.ts';
import { moduleJobs, type ModuleDefinition } from '../framework/entity/define.ts';
import type { TenantRef } from '../framework/context/tenant.ts';
import type { JobOutcome } from '../framework/events/jobs.ts';
import { SettableClock, systemClock } from '../framework/clock.ts';
import { isCommandRefusal, openCommandApp, type CommandApp } from './command-database.ts';

const USAGE =
  'usage: npm run job -- <name> [--at <ISO time, e.g. 2030-01-31T02:00:00Z>] [--tenant <slug>] [--config config.yaml]';

class UsageError extends Error {
  override name = 'UsageError';
}

export interface JobCommandOptions {
  /** The installation's modules unless given (tests add the test kit). */
  modules?: readonly ModuleDefinition[];
  /** Read from --config (and TENANTRY_* variables) unless given. */
  config?: Config;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

/** The report printed for one run. */
export function formatOutcome(outcome: JobOutcome): string {
  const who = outcome.tenant ?? '(no tenant)';
  if (!outcome.ok) return `  ${who}: failed: ${outcome.error}`;
  return `  ${who}: ok${outcome.summary ? ` ${JSON.stringify(outcome.summary)}` : ''}`;
}

function parseAt(value: string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  // An ISO date, or date and time; a time without a zone would depend on the machine's.
  if (!/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/.test(value)) {
    throw new UsageError(`--at must be an ISO time with its zone, e.g. 2030-01-31T02:00:00Z (got ${value})`);
  }
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw new UsageError(`--at is not a valid time: ${value}`);
  return at;
}

/** The command itself: returns its exit status. */
export async function jobCommand(argv: readonly string[], options: JobCommandOptions = {}): Promise<number> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const err = options.err ?? ((text: string) => process.stderr.write(text));
  let command: CommandApp | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        at: { type: 'string' },
        tenant: { type: 'string' },
        config: { type: 'string', default: 'config.yaml' },
      },
    });
    if (positionals.length !== 1) throw new UsageError('name one job');
    const name = positionals[0]!;
    const at = parseAt(values.at);
    const config = options.config ?? loadConfig(values.config);
    const modules = options.modules ?? (await import('../modules/index.ts')).allModules;
    const job = modules.flatMap((m) => moduleJobs(m, config)).find((j) => j.name === name);
    if (!job) {
      const declared = modules.flatMap((m) => moduleJobs(m, config)).map((j) => j.name);
      throw new UsageError(`no job ${name}; declared: ${declared.join(', ') || 'none'}`);
    }
    if (values.tenant !== undefined && !job.perTenant)
      throw new UsageError(`job ${name} is not per tenant: --tenant does not apply`);

    const [{ JobRunner }, { tenantBySlug }] = await Promise.all([
      import('../framework/events/jobs.ts'),
      import('../framework/context/tenant-lookup.ts'),
    ]);
    const clock = at ? new SettableClock(at) : systemClock;
    command = await openCommandApp(config, { modules, clock });
    const { app } = command;
    let tenant: TenantRef | undefined;
    if (values.tenant !== undefined) {
      const found = await tenantBySlug(app.services.db, values.tenant);
      if (!found) throw new UsageError(`no tenant ${values.tenant}`);
      if (found.status !== 'active')
        throw new UsageError(`tenant ${values.tenant} is ${found.status}: jobs run only in served tenants`);
      tenant = { id: found.id, slug: found.slug, isOperator: found.isOperator };
    }
    const started = clock.now();
    out(`${name}${job.perTenant ? ' (per tenant)' : ''} at ${started.toISOString()}${at ? ' (--at)' : ''}\n`);
    const outcomes = await new JobRunner(app.services).runOnce(name, tenant ? { tenant } : {});
    for (const outcome of outcomes) out(`${formatOutcome(outcome)}\n`);
    const failed = outcomes.filter((o) => !o.ok).length;
    if (job.perTenant)
      out(
        `${outcomes.length} tenant${outcomes.length === 1 ? '' : 's'}: ${outcomes.length - failed} ok, ${failed} failed\n`,
      );
    return failed > 0 ? 1 : 0;
  } catch (error) {
    const e = error as Error & { code?: string };
    if (e instanceof UsageError || e.code?.startsWith('ERR_PARSE_ARGS')) {
      err(`job: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    const known = isCommandRefusal(e);
    err(`job: ${known ? e.message : (e.stack ?? e.message)}\n`);
    return 1;
  } finally {
    await command?.close();
  }
}

if (import.meta.main) {
  void jobCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
