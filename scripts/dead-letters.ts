/**
 * npm run dead-letters -- list | retry <id> | retry --all [--config config.yaml]
 *
 * The operator's view of the deliveries and job runs that spent their retries (docs/operations.md,
 * "Dead letters"). `list` prints one line per letter: its id, when it failed, the queue, the event
 * or job, the tenant and the last error. `retry <id>` queues that letter's failed job once more
 * (pg-boss's retry) and removes the letter; should the job fail again it is dead-lettered again.
 * `retry --all` does so for every letter. Exit 0 when every letter asked for was re-driven, 1 when
 * one could not be (its failed job no longer kept), 2 on a usage error or an unknown id. Works
 * whether or not the service is running; a running worker picks the retried jobs up at once.
 */
import { parseArgs } from 'node:util';
import { PgBoss } from 'pg-boss';
import { loadConfig } from '../framework/config/load.ts';
import type { Config } from '../framework/config/schema.ts';
import { openDatabase, type Db } from '../framework/db/pool.ts';
import {
  listDeadLetters,
  retryAllDeadLetters,
  retryDeadLetter,
  type DeadLetter,
  type RetryOutcome,
} from '../framework/events/dead-letters.ts';
import { commandDatabase } from './command-database.ts';

const USAGE = 'usage: npm run dead-letters -- list | retry <id> | retry --all [--config config.yaml]';

class UsageError extends Error {
  override name = 'UsageError';
}

export interface DeadLettersCommandOptions {
  /** Read from --config (and TENANTRY_* variables) unless given. */
  config?: Config;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

export function formatLetter(letter: DeadLetter): string {
  const what = letter.eventId ? `event ${letter.name ?? '?'} ${letter.eventId}` : `job ${letter.name ?? '?'}`;
  return `${letter.id}  ${letter.failedAt.toISOString()}  ${letter.queue}  ${what}  tenant ${letter.tenantId ?? '-'}  ${letter.error}`;
}

const SAID: Record<RetryOutcome, string> = {
  retried: 'retried',
  missing: 'no such dead letter',
  gone: 'not retried: its failed job is no longer kept by the queue',
};

export async function deadLettersCommand(
  argv: readonly string[],
  options: DeadLettersCommandOptions = {},
): Promise<number> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const err = options.err ?? ((text: string) => process.stderr.write(text));
  let db: Db | undefined;
  let boss: PgBoss | undefined;
  let stopEmbedded: (() => Promise<void>) | undefined;
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: { all: { type: 'boolean', default: false }, config: { type: 'string', default: 'config.yaml' } },
    });
    const [verb, id, ...rest] = positionals;
    if (rest.length > 0) throw new UsageError('too many arguments');
    if (verb === 'list') {
      if (id !== undefined || values.all) throw new UsageError('list takes no argument');
    } else if (verb === 'retry') {
      if ((id === undefined) === !values.all) throw new UsageError('retry takes one id, or --all');
    } else {
      throw new UsageError(verb ? `unknown command ${verb}` : 'name a command');
    }

    const config = options.config ?? loadConfig(values.config);
    const { databaseUrl, embedded } = await commandDatabase(config);
    stopEmbedded = embedded ? () => embedded.stop() : undefined;
    db = openDatabase(databaseUrl, {
      size: 2,
      acquireTimeoutMs: config.database.acquire_timeout_ms,
      statementTimeoutMs: config.database.statement_timeout_ms,
    });

    if (verb === 'list') {
      const letters = await listDeadLetters(db);
      for (const letter of letters) out(`${formatLetter(letter)}\n`);
      out(`${letters.length} dead letter${letters.length === 1 ? '' : 's'}\n`);
      return 0;
    }

    // The worker's pg-boss, as a client only: no maintenance, no schedule, no migration of its schema.
    boss = new PgBoss({
      connectionString: databaseUrl,
      schema: 'pgboss',
      max: 2,
      supervise: false,
      schedule: false,
      migrate: false,
    });
    boss.on('error', (e: Error) => err(`dead-letters: pg-boss: ${e.message}\n`));
    await boss.start();
    const outcomes = values.all
      ? await retryAllDeadLetters(db, boss)
      : [{ id: id!, outcome: await retryDeadLetter(db, boss, id!) }];
    for (const { id: letter, outcome } of outcomes) out(`${letter}: ${SAID[outcome]}\n`);
    if (values.all) out(`${outcomes.filter((o) => o.outcome === 'retried').length} of ${outcomes.length} retried\n`);
    if (outcomes.some((o) => o.outcome === 'missing')) return 2;
    return outcomes.some((o) => o.outcome !== 'retried') ? 1 : 0;
  } catch (error) {
    const e = error as Error & { code?: string };
    if (e instanceof UsageError || e.code?.startsWith('ERR_PARSE_ARGS')) {
      err(`dead-letters: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    const known = ['ConfigError', 'CommandDatabaseError'].includes(e.name);
    err(`dead-letters: ${known ? e.message : (e.stack ?? e.message)}\n`);
    return 1;
  } finally {
    await boss?.stop({ graceful: false, close: true }).catch(() => {});
    await db?.close();
    await stopEmbedded?.();
  }
}

if (import.meta.main) {
  void deadLettersCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
