import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type {
  ExportBatch,
  ExportFormat,
  ExportWalk,
  ListExport,
  NoTxRouteDefinition,
  RouteDefinition,
} from '../../entity/define.ts';
import type { TxContext } from '../../context/tx.ts';
import { strategyFor, type RoutePlan, type RequestStrategy } from '../../http/request-strategies.ts';
import { transactionsFor } from '../../http/replica-choice.ts';
import { exportFormatOf } from '../../http/negotiation.ts';
import { csvHeader, csvRows, ndjsonRows } from './csv.ts';
import { addVary } from '../../http/vary.ts';

/**
 * A list's export (RouteDefinition.exports): every row its filters match, as CSV or NDJSON,
 * streamed. No transaction is held for the whole walk: the caller is guarded in a short
 * transaction of its own (as a `transaction: 'none'` route's), then each batch of rows is read in
 * its own short transaction, after the previous batch's last row by keyset (the list's `after`),
 * so none runs longer than database.statement_timeout_ms however many rows there are. The next
 * batch is read only when the previous one has been taken by the connection (a stream read on
 * demand), so the memory an export holds does not grow with the rows. The first batch is read
 * before the answer starts: a refused filter or reference is still a problem answer, not a cut
 * stream. Exports read from the replica when the installation has one.
 */

/** Rows per batch: one short transaction each. */
export const EXPORT_BATCH_ROWS = 1000;

type Transaction = <T>(fn: (tx: TxContext) => Promise<T>) => Promise<T>;

const MEDIA_TYPES = { csv: 'text/csv; charset=utf-8', ndjson: 'application/x-ndjson; charset=utf-8' } as const;

/** The export's strategy for a list route: serves the requests that ask for CSV or NDJSON. */
export function exportStrategy(
  plan: RoutePlan,
  route: RouteDefinition & { exports: ListExport },
  offered: readonly string[],
): RequestStrategy {
  const declared = route.exports;
  const { handler: _handler, oneExchange: _oneExchange, transaction: _transaction, ...rest } = route;
  const walking: NoTxRouteDefinition = {
    ...rest,
    transaction: 'none',
    handler: async ({ query, params, request, reply, services, transaction }) => {
      const format: ExportFormat = exportFormatOf(request, offered) === 'ndjson' ? 'ndjson' : 'csv';
      const now = services.clock.now();
      const walk = declared.open(query as Record<string, unknown>, now, (params ?? {}) as Record<string, string>);
      const first = await transaction((tx) => walk.batch(tx, undefined, EXPORT_BATCH_ROWS, format));
      reply
        .type(MEDIA_TYPES[format])
        .header(
          'content-disposition',
          `attachment; filename="${declared.name}-${now.toISOString().slice(0, 10)}.${format}"`,
        );
      addVary(reply, 'Accept');
      return Readable.from(encoded(walk, first, transaction, format));
    },
  };
  return strategyFor(
    { ...plan, transactions: transactionsFor({ ...walking, replica: 'always' }, plan.services) },
    walking,
  );
}

/**
 * The export's text, batch by batch: a CSV's header first, then each batch as one Buffer, from the
 * text PostgreSQL wrote or from the rows as read.
 */
async function* encoded(
  walk: ExportWalk,
  first: ExportBatch,
  transaction: Transaction,
  format: ExportFormat,
): AsyncGenerator<Buffer> {
  const { columns } = walk;
  if (format === 'csv') yield Buffer.from(csvHeader(columns));
  let batch = first;
  for (;;) {
    const text =
      'text' in batch ? batch.text : format === 'csv' ? csvRows(batch.rows, columns) : ndjsonRows(batch.rows, columns);
    if (text !== '') yield Buffer.from(text);
    const after = batch.next;
    if (after === null) return;
    batch = await transaction((tx) => walk.batch(tx, after, EXPORT_BATCH_ROWS, format));
  }
}

/** Whether a request of an exporting list asks for the export rather than a page. */
export const asksForExport = (request: FastifyRequest, offered: readonly string[]): boolean =>
  exportFormatOf(request, offered) !== 'json';
