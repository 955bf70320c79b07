import { formatBytes } from '../../framework/format.ts';
import { planLimitsOf } from '../../framework/entitlements/limits.ts';
import type { TxContext } from '../../framework/contracts/transaction.ts';

/** One limit as the subscription page shows it: "3 of 5 seats", and a bar when it has a bound. */
export interface UsageBar {
  name: string;
  /** "3 of 5 seats", "1.2 MB of 10 MB", or "4 tokens, no limit". */
  text: string;
  use: number;
  /** The bound; null: none (no bar). */
  max: number | null;
  /** At or past the bound: new use is refused. */
  full: boolean;
}

const amount = (unit: string, n: number) => (unit === 'bytes' ? formatBytes(n) : `${n}`);

/**
 * The tenant's limits and use, in words (templates/admin/components/usage-bars.eta), read as
 * GET /api/v1/billing/entitlements reads them, in the page's transaction. A component of its own,
 * so the subscription page's layout and the bars change apart.
 */
export async function usageBars(tx: TxContext): Promise<UsageBar[]> {
  const { limits } = await planLimitsOf(tx).uses(tx);
  return limits.map((limit) => ({
    name: limit.name,
    text:
      limit.value === null
        ? `${amount(limit.unit, limit.use)} ${limit.unit === 'bytes' ? 'stored' : limit.unit}, no limit`
        : limit.unit === 'bytes'
          ? `${amount(limit.unit, limit.use)} of ${amount(limit.unit, limit.value)} stored`
          : `${limit.use} of ${limit.value} ${limit.unit}`,
    use: limit.use,
    max: limit.value,
    full: limit.value !== null && limit.use >= limit.value,
  }));
}
