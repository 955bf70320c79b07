import { sql } from 'kysely';
import type { Readable } from 'node:stream';
import type { Services } from '../../services.ts';
import type { PendingEvent, PublishAllowList, TxContext } from '../../context/tx.ts';
import type { QueueDefinition, SubscriptionDefinition } from '../../entity/define.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { tenantById } from '../../context/tenant-lookup.ts';
import { blobStoreFor } from '../../storage/index.ts';
import { problem } from '../../errors.ts';
import { toProblem } from '../../http/problems.ts';
import { csvRows, ndjsonRows, UnreadableUpload, type UploadRow } from './rows.ts';
import { RowCheck, rowProblem, type RowProblem } from './row-check.ts';
import { REFUSALS_KEPT, type ImportRow } from './import-status.ts';

/** Rows written per transaction. */
export const IMPORT_BATCH = 500;

/** The framework's event that hands an upload to the worker (framework/entity/registry.ts). */
export const IMPORT_REQUESTED = 'import.requested';
/** The worker queue imports run on. */
export const IMPORT_QUEUE = 'import';

/**
 * import.requested → the import's job on the import queue, queued in the delivery's transaction
 * (with an id derived from the event: a retried delivery queues it once). Its group is the import.
 */
export const importRequested: SubscriptionDefinition = {
  name: 'import-requested',
  event: IMPORT_REQUESTED,
  async handle(_ctx, event, _services, jobs) {
    const id = String(event.payload.id);
    await jobs!.send(IMPORT_QUEUE, { tenantId: event.tenantId, importId: id }, { group: id });
  },
};

/** The queue: a few imports at once per worker, one per tenant, each retried from where it stopped. */
export const importQueue: QueueDefinition = {
  name: IMPORT_QUEUE,
  retry: () => ({ retryDelay: 5, retryDelayMax: 300, retryLimit: 5 }),
  groupConcurrency: 1,
  concurrency: 2,
  tenantConcurrency: 1,
  async work(data, services, attempt) {
    const tenantId = String(data.tenantId);
    const importId = String(data.importId);
    try {
      await runImport(services, tenantId, importId);
    } catch (err) {
      // The last attempt: the import is told it stopped, rather than staying "running" for ever.
      if (attempt.last) await stopImport(services, tenantId, importId, rowProblem(err));
      throw err;
    }
  },
};

interface Progress {
  read: number;
  created: number;
  refusals: { line: number; problem: RowProblem }[];
  pending: { line: number; values: Record<string, unknown> }[];
  lastLine: number;
}

const fresh = (lastLine: number): Progress => ({ read: 0, created: 0, refusals: [], pending: [], lastLine });

/**
 * Runs one import from where its committed progress stopped: reads the upload from the blob store
 * as a stream (never whole in memory), checks every row as the entity's create route would (its
 * protected fields, normalisers and create schema), and creates the valid ones through the
 * entity's operations (its hooks, its events, its database rules) in batches of 500, one
 * transaction each, a savepoint per row so that a row the database refuses (a taken unique value,
 * a hook's refusal) is that row's refusal alone. Each batch commits its rows, its refused rows and
 * the progress together: a retry resumes after the last committed line. A dry run checks and
 * counts, and writes no row.
 */
export async function runImport(services: Services, tenantId: string, importId: string): Promise<void> {
  const tenant = await tenantById(services.db, tenantId);
  if (!tenant) return;
  const row = await services.transactions.run(tenant, async (tx) => {
    const found = await tx.db
      .selectFrom('imports')
      .selectAll()
      .where('id', '=', importId)
      .forUpdate()
      .executeTakeFirst();
    if (!found || found.status === 'done' || found.status === 'failed') return undefined;
    if (found.status === 'queued')
      await tx.db
        .updateTable('imports')
        .set({ status: 'running', updated_at: tx.now })
        .where('id', '=', importId)
        .execute();
    return found;
  });
  if (!row?.storage_key) return;
  const entity = services.registry.entities.find((e) => e.names.key === row.resource);
  if (!entity) {
    await stopImport(services, tenantId, importId, {
      code: 'IMPORT_UNREADABLE',
      detail: `${row.resource} is no longer a resource of this service`,
    });
    return;
  }
  const store = blobStoreFor(services.config);
  const source = (await store.open(row.storage_key)) as Readable;
  const writer = new BatchWriter(services, entity, row, tenant);
  const check = new RowCheck(entity);
  let progress = fresh(row.lines_done);
  try {
    const rows: AsyncIterable<UploadRow | { header: string[] }> =
      row.format === 'csv' ? csvRows(source) : ndjsonRows(source);
    for await (const item of rows) {
      if ('header' in item) {
        const unknown = check.unknownColumns(item.header);
        if (unknown.length > 0)
          throw new UnreadableUpload(
            problem(
              'IMPORT_COLUMNS_UNKNOWN',
              `The header names ${unknown.map((c) => JSON.stringify(c)).join(', ')}, which ${unknown.length === 1 ? 'is no field' : 'are no fields'} of ${entity.names.path}`,
            ),
          );
        continue;
      }
      // Committed by an earlier attempt.
      if (item.line <= row.lines_done) continue;
      progress.read += 1;
      progress.lastLine = item.line;
      if ('refused' in item) progress.refusals.push({ line: item.line, problem: rowProblem(item.refused) });
      else {
        try {
          const values = check.check(row.format === 'csv' ? check.fromText(item.values) : item.values);
          progress.pending.push({ line: item.line, values });
        } catch (err) {
          progress.refusals.push({ line: item.line, problem: rowProblem(err) });
        }
      }
      if (progress.pending.length >= IMPORT_BATCH || progress.refusals.length >= IMPORT_BATCH) {
        await writer.write(progress);
        progress = fresh(progress.lastLine);
      }
    }
    await writer.write(progress, 'done');
  } catch (err) {
    if (!(err instanceof UnreadableUpload)) throw err;
    // What was read before the upload went wrong is kept, then the import stops there.
    await writer.write(progress);
    await stopImport(services, tenantId, importId, rowProblem(err.problem));
  } finally {
    source.destroy();
  }
}

/** Writes one batch's rows, refusals and progress in one transaction. */
class BatchWriter {
  private readonly services: Services;
  private readonly row: ImportRow;
  private readonly tenant: NonNullable<Awaited<ReturnType<typeof tenantById>>>;
  private readonly publishes: PublishAllowList;
  /** Refused rows recorded so far (every one is counted; the first REFUSALS_KEPT are listed). */
  private refused: number;

  constructor(services: Services, entity: ResolvedEntity, row: ImportRow, tenant: BatchWriter['tenant']) {
    this.services = services;
    this.row = row;
    this.tenant = tenant;
    this.refused = row.refused;
    // What the entity's create route may publish: its lifecycle events and its hooks' events.
    this.publishes = {
      events: new Set([...Object.values(entity.names.events), ...(entity.def.hookPublishes ?? [])]),
      by: `the import of ${entity.names.path}`,
    };
  }

  async write(progress: Progress, finished?: 'done'): Promise<void> {
    const { services, row } = this;
    const ops = services.operations.of(row.resource);
    const key = row.storage_key;
    await services.transactions.run(
      this.tenant,
      async (tx) => {
        if (!row.dry_run) {
          for (const pending of progress.pending) {
            const refusal = await createOne(tx, (ctx) => ops.create(ctx, pending.values));
            if (refusal) progress.refusals.push({ line: pending.line, problem: refusal });
            else progress.created += 1;
          }
        }
        const listed = progress.refusals
          .sort((a, b) => a.line - b.line)
          .slice(0, Math.max(0, REFUSALS_KEPT - this.refused))
          .map((r) => ({ import_id: row.id, line: r.line, problem: JSON.stringify(r.problem) }));
        if (listed.length > 0) await tx.db.insertInto('import_refusals').values(listed).execute();
        await tx.db
          .updateTable('imports')
          .set((eb) => ({
            rows_read: eb('rows_read', '+', progress.read),
            created: eb('created', '+', progress.created),
            refused: eb('refused', '+', progress.refusals.length),
            lines_done: progress.lastLine,
            updated_at: tx.now,
            ...(finished ? { status: finished, finished_at: tx.now, storage_key: null } : {}),
          }))
          .where('id', '=', row.id)
          .execute();
        // The upload goes once the import's end has committed; reconcile removes it should this fail.
        if (finished && key)
          tx.afterCommit(() =>
            blobStoreFor(services.config)
              .remove(key)
              .catch(() => false),
          );
      },
      {
        actorId: row.created_by,
        ...(row.created_by_name ? { acting: { kind: 'token', name: row.created_by_name } } : {}),
        publishes: this.publishes,
      },
    );
    this.refused += progress.refusals.length;
  }
}

/**
 * One row's create in its own savepoint: its events reach the batch's outbox only if it stands.
 * A refusal (any 4xx problem) rolls the row back alone and is answered; anything else fails the batch.
 */
async function createOne(tx: TxContext, create: (ctx: TxContext) => Promise<unknown>): Promise<RowProblem | undefined> {
  const events: PendingEvent[] = [];
  const ctx: TxContext = { ...tx, publish: (name, payload = {}) => void events.push({ name, payload }) };
  await sql`savepoint import_row`.execute(tx.db);
  try {
    await create(ctx);
  } catch (err) {
    if (toProblem(err).status >= 500) throw err;
    await sql`rollback to savepoint import_row`.execute(tx.db);
    return rowProblem(err);
  }
  await sql`release savepoint import_row`.execute(tx.db);
  for (const event of events) tx.publish(event.name, event.payload);
  return undefined;
}

/** Marks an import failed with the problem that stopped it, and lets its upload go. */
async function stopImport(services: Services, tenantId: string, importId: string, stopped: RowProblem): Promise<void> {
  const tenant = await tenantById(services.db, tenantId);
  if (!tenant) return;
  await services.transactions.run(tenant, async (tx) => {
    const row = await tx.db
      .selectFrom('imports')
      .select(['storage_key', 'status'])
      .where('id', '=', importId)
      .forUpdate()
      .executeTakeFirst();
    if (!row || (row.status !== 'queued' && row.status !== 'running')) return;
    await tx.db
      .updateTable('imports')
      .set({
        status: 'failed',
        problem: JSON.stringify(stopped),
        finished_at: tx.now,
        updated_at: tx.now,
        storage_key: null,
      })
      .where('id', '=', importId)
      .execute();
    const key = row.storage_key;
    if (key)
      tx.afterCommit(() =>
        blobStoreFor(services.config)
          .remove(key)
          .catch(() => false),
      );
  });
}
