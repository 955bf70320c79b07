import type { ExportFormat, ListExport } from '../../entity/define.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import type { TxContext } from '../../context/tx.ts';
import type { EntityOperations } from '../../operations/entity-ops.ts';
import type { PageQuery } from '../../operations/paging.ts';
import { exportColumns, exportRow } from './list-columns.ts';
import { lineSql, sqlCells } from './sql-lines.ts';
import { presentAll } from '../../http/entity-route-parts.ts';

type Present = (tx: TxContext, row: Record<string, unknown>) => unknown;

/**
 * A generated list's export: the list's own page, read batch by batch with its cursor (`after`),
 * each row shaped as the list answers it (afterRead, expansions, fields=). When the rows are the
 * stored columns as they stand (no afterRead, no expansion) and PostgreSQL can write every column
 * asked for (sql-lines.ts), each batch comes back already written, as one text: no row objects,
 * no string per cell, which is what keeps an export of a million rows within its memory bound.
 */
export function entityExport(entity: ResolvedEntity, ops: EntityOperations, present: Present): ListExport {
  const afterRead = entity.def.hooks?.afterRead !== undefined;
  const cells = sqlCells(entity);
  return {
    name: entity.names.plural,
    open(query, now) {
      const asked = ops.parse(query, now);
      const references = new Set(ops.model.references.keys());
      const sort = typeof query.sort === 'string' ? query.sort : 'createdAt';
      const q = typeof query.q === 'string' ? query.q : undefined;
      const columns = exportColumns(entity.schemas.row, asked, references);
      const written = !afterRead && asked.expand.length === 0 && columns.every((c) => cells.has(c));
      const lines = new Map<ExportFormat, string>();
      const lineOf = (format: ExportFormat) => {
        const found = lines.get(format) ?? lineSql(format, columns, cells);
        lines.set(format, found);
        return found;
      };
      return {
        columns,
        async batch(tx, after, size, format) {
          if (written) return ops.exportText(tx, { sort, q, after }, asked, lineOf(format), size);
          const page: PageQuery = {
            limit: size,
            offset: 0,
            sort,
            ...(q !== undefined ? { q } : {}),
            ...(after !== undefined ? { after } : {}),
          };
          const read = await ops.list(tx, page, undefined, asked);
          const items = (afterRead ? await presentAll(present, tx, read.items) : read.items) as Record<
            string,
            unknown
          >[];
          await ops.expand(tx, items, asked);
          return { rows: items.map((row) => exportRow(row, asked)), next: read.next };
        },
      };
    },
  };
}
