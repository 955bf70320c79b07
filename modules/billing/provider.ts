import type { Services } from '../../framework/entity/define.ts';
import type { ChargeOutcome } from './tables.ts';

export interface ChargeRequest {
  /** In the currency's minor unit. */
  amount: number;
  currency: string;
  tenantId: string;
  /** The same key is one charge: a provider replays the first outcome and never charges twice. */
  idempotencyKey: string;
}

export interface ChargeResult {
  outcome: ChargeOutcome;
  /** Why a charge did not settle, for the log (never shown to another tenant). */
  reason?: string;
}

/**
 * Takes money. Called only with no database transaction open (SPEC general rule 5): the caller
 * records the pending charge in one transaction, calls charge, and records the receipt in another.
 */
export interface PaymentProvider {
  readonly name: string;
  charge(request: ChargeRequest): Promise<ChargeResult>;
}

export type SandboxOutcome = 'settle' | 'decline' | 'error';

const OUTCOMES: Record<SandboxOutcome, ChargeOutcome> = { settle: 'settled', decline: 'declined', error: 'error' };

/**
 * The built-in provider (billing.provider: sandbox). It keeps its charges in a table of its own,
 * standing where a real provider's servers stand, so idempotency keys hold across restarts: the
 * same key with the same amount, currency and tenant replays the first outcome; with different
 * ones it is an error, and nothing is charged. `outcome` (billing.sandbox.outcome) decides what
 * new charges do. It reads and writes through the pool, which refuses a checkout while a
 * transaction of the caller is open: a charge inside a transaction fails loudly.
 */
export class SandboxProvider implements PaymentProvider {
  readonly name = 'sandbox';
  outcome: SandboxOutcome;
  private readonly services: Services;

  constructor(services: Services, outcome: SandboxOutcome) {
    this.services = services;
    this.outcome = outcome;
  }

  async charge(request: ChargeRequest): Promise<ChargeResult> {
    const db = this.services.db.kysely;
    const inserted = await db
      .insertInto('billing_sandbox_charges')
      .values({
        idempotency_key: request.idempotencyKey,
        tenant_id: request.tenantId,
        amount: request.amount,
        currency: request.currency,
        outcome: OUTCOMES[this.outcome],
      })
      .onConflict((oc) => oc.column('idempotency_key').doNothing())
      .returning('outcome')
      .executeTakeFirst();
    if (inserted) return { outcome: inserted.outcome };
    const first = await db
      .selectFrom('billing_sandbox_charges')
      .selectAll()
      .where('idempotency_key', '=', request.idempotencyKey)
      .executeTakeFirstOrThrow();
    if (
      first.amount !== request.amount ||
      first.currency !== request.currency ||
      first.tenant_id !== request.tenantId
    ) {
      return { outcome: 'error', reason: `idempotency key ${request.idempotencyKey} was used with other parameters` };
    }
    return { outcome: first.outcome };
  }
}

const providers = new WeakMap<Services, PaymentProvider>();

/** The installation's provider, made from the configuration on first use. */
export function paymentProvider(services: Services): PaymentProvider {
  let provider = providers.get(services);
  if (!provider) {
    provider = new SandboxProvider(services, services.config.billing.sandbox.outcome);
    providers.set(services, provider);
  }
  return provider;
}

/** Puts another provider in place (a real one at boot, or a test's wrapper). */
export function usePaymentProvider(services: Services, provider: PaymentProvider): void {
  providers.set(services, provider);
}
