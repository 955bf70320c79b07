import { CompiledQuery } from 'kysely';
import type { PgBoss } from 'pg-boss';
import type { Db } from '../db/pool.ts';

/**
 * The dead letters an operator sees and re-drives. The worker records each delivery or job run
 * that spent its retries in `dead_letters` (worker.ts, recordDeadLetter); the failed job itself
 * stays in its own pg-boss queue, failed, for the queue's retention. Re-driving a letter is
 * pg-boss's documented `retry(name, ids)` on that failed job, in one transaction with the
 * letter's removal: the job is attempted once more, and should it fail again it is dead-lettered
 * again, as a new letter.
 */

export interface DeadLetter {
  id: string;
  /** The pg-boss queue that gave up: `sub-<subscription>` for an event delivery, a job's queue for a job run. */
  queue: string;
  eventId: string | null;
  tenantId: string | null;
  /** The event's name, or the job's. */
  name: string | null;
  error: string;
  failedAt: Date;
}

/** What the admin health page and /ready show: how many letters wait, and the latest one's error. */
export interface DeadLetterSummary {
  count: number;
  lastError: string | null;
  lastFailedAt: Date | null;
}

export async function deadLetterSummary(db: Db): Promise<DeadLetterSummary> {
  const counted = await db.kysely
    .selectFrom('dead_letters')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirst();
  const last = await db.kysely
    .selectFrom('dead_letters')
    .select(['error', 'failed_at'])
    .orderBy('failed_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  return { count: Number(counted?.count ?? 0), lastError: last?.error ?? null, lastFailedAt: last?.failed_at ?? null };
}

export async function listDeadLetters(db: Db): Promise<DeadLetter[]> {
  const rows = await db.kysely
    .selectFrom('dead_letters')
    .select(['id', 'queue', 'event_id', 'tenant_id', 'name', 'error', 'failed_at'])
    .orderBy('failed_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({
    id: String(r.id),
    queue: r.queue,
    eventId: r.event_id,
    tenantId: r.tenant_id,
    name: r.name,
    error: r.error,
    failedAt: r.failed_at,
  }));
}

/** retried: the failed job is queued again; missing: no such letter; gone: its failed job is no longer kept. */
export type RetryOutcome = 'retried' | 'missing' | 'gone';

/**
 * Re-drives one letter: its failed job is retried through pg-boss and the letter removed, both or
 * neither (pg-boss's statement runs on the transaction's connection, its documented `db` option).
 */
export async function retryDeadLetter(db: Db, boss: PgBoss, id: string): Promise<RetryOutcome> {
  if (!/^\d{1,18}$/.test(id)) return 'missing';
  return await db.kysely
    .transaction()
    .execute(async (trx) => {
      const letter = await trx
        .deleteFrom('dead_letters')
        .where('id', '=', id)
        .returning(['queue', 'event_id', 'tenant_id', 'name', 'payload'])
        .executeTakeFirst();
      if (!letter) return 'missing';
      const connection = {
        executeSql: async (text: string, values: unknown[] = []) => ({
          rows: (await trx.executeQuery(CompiledQuery.raw(text, values))).rows as unknown[],
        }),
      };
      const jobs = await boss.findJobs(letter.queue, { data: jobDataOf(letter), db: connection });
      const failed = jobs.filter((job) => job.state === 'failed').map((job) => job.id);
      if (failed.length === 0) {
        // Nothing to retry: the letter stays, for the operator to see (and act on by hand).
        throw new GoneJob();
      }
      await boss.retry(letter.queue, failed, { db: connection });
      return 'retried' as const;
    })
    .catch((err: unknown) => {
      if (err instanceof GoneJob) return 'gone' as const;
      throw err;
    });
}

/** Re-drives every letter, oldest first; returns each letter's outcome. */
export async function retryAllDeadLetters(db: Db, boss: PgBoss): Promise<{ id: string; outcome: RetryOutcome }[]> {
  const outcomes: { id: string; outcome: RetryOutcome }[] = [];
  for (const letter of await listDeadLetters(db))
    outcomes.push({ id: letter.id, outcome: await retryDeadLetter(db, boss, letter.id) });
  return outcomes;
}

class GoneJob extends Error {
  override name = 'GoneJob';
}

/**
 * What the failed job's data contains, from what the letter recorded: an event delivery carries
 * the event's id; a job run its job, tenant and slot (worker.ts, recordDeadLetter).
 */
function jobDataOf(letter: {
  event_id: string | null;
  tenant_id: string | null;
  name: string | null;
  payload: unknown;
}): Record<string, unknown> {
  if (letter.event_id) return { id: letter.event_id };
  const slot = (letter.payload as { slot?: unknown } | null)?.slot;
  return {
    ...(letter.name ? { job: letter.name } : {}),
    ...(letter.tenant_id ? { tenantId: letter.tenant_id } : {}),
    ...(typeof slot === 'string' ? { slot } : {}),
  };
}
