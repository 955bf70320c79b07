import type { TxContext } from '../../context/tx.ts';
import type { Services } from '../../contracts/services.ts';
import { readableEntities } from '../../catalog/catalog.ts';
import { peopleLabels } from '../labels.ts';
import type { PageQuery } from '../../operations/paging.ts';
import type { EntityOperationsApi } from '../../contracts/operations.ts';
import { enumValues, stripOptional } from '../../schema/column-types.ts';
import type { StatusCount } from './status-chart.ts';

/** One card of the dashboard: a resource the caller may read, and what its list reports. */
export interface DashboardCard {
  key: string;
  module: string;
  label: string;
  labelPlural: string;
  /** The rows its list reports (its capped `total`); null for a singleton, which has no list. */
  count: number | null;
  /** False when the list stopped counting at its cap: the count is then "at least". */
  countExact: boolean;
  /** Its rows per status, every declared status in order, for a resource whose status is an enum. */
  statuses?: StatusCount[];
}

// A page of one row is the cheapest list that still reports the capped total.
const COUNT_PAGE: PageQuery = { limit: 1, offset: 0, sort: 'createdAt' };

/**
 * The cards of the resources the caller may read (the catalog's set), each with the count its list
 * reports. Every count is the entity's own list operation, row access included, run one after the
 * other in the caller's transaction: no second connection.
 */
export async function dashboardCards(tx: TxContext, services: Services): Promise<DashboardCard[]> {
  const cards: DashboardCard[] = [];
  for (const entity of readableEntities(services.registry, tx)) {
    const base = {
      key: entity.names.key,
      module: entity.module,
      // What people call it (labels.ts): content's card says "Pages and posts", "1 page or post".
      ...peopleLabels(entity),
    };
    if (entity.singleton) {
      cards.push({ ...base, count: null, countExact: true });
      continue;
    }
    const ops = services.operations.of(entity.names.key);
    const page = await ops.list(tx, COUNT_PAGE);
    cards.push({ ...base, count: page.total, countExact: page.totalExact, ...(await statusCounts(tx, ops)) });
  }
  return cards;
}

/**
 * A resource's rows per status, when its status is an enum: its summary by status (one statement,
 * row access included), every declared status in order, those without a row at 0.
 */
async function statusCounts(tx: TxContext, ops: EntityOperationsApi): Promise<{ statuses?: StatusCount[] }> {
  const { fields, filterable } = ops.entity.def;
  const schema = fields.status;
  // Only a status the summary may group by: a field of the list's filters (its own or every one).
  if (!schema || (filterable && !filterable.includes('status'))) return {};
  const values = enumValues(stripOptional(schema));
  if (!values?.every((v): v is string => typeof v === 'string')) return {};
  const summary = await ops.summary(tx, { groupBy: 'status' });
  const counted = new Map(summary.groups.map((g) => [g.status, g.count as number]));
  return { statuses: values.map((value) => ({ value, count: counted.get(value) ?? 0 })) };
}
