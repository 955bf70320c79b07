import type { TxContext } from '../../context/tx.ts';
import type { Services } from '../../contracts/services.ts';
import { readableEntities } from '../../catalog/catalog.ts';
import { peopleLabels } from '../labels.ts';
import type { PageQuery } from '../../operations/paging.ts';

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
    const page = await services.operations.of(entity.names.key).list(tx, COUNT_PAGE);
    cards.push({ ...base, count: page.total, countExact: page.totalExact });
  }
  return cards;
}
