import type { TxContext } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';

/** A live plan by id, or a 422 naming the field: an unknown plan cannot be subscribed to. */
export async function livePlan(tx: TxContext, planId: string, options: { mustBeActive: boolean }) {
  const plan = await tx.db
    .selectFrom('plans')
    .selectAll()
    .where('id', '=', planId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  if (!plan)
    throw problem('VALIDATION_FAILED', `no plan ${planId}`, {
      errors: [{ pointer: '/body/planId', message: 'unknown plan' }],
    });
  if (options.mustBeActive && !plan.active) {
    throw problem('VALIDATION_FAILED', `plan ${plan.code} is not open to new subscriptions`, {
      errors: [{ pointer: '/body/planId', message: 'inactive plan' }],
    });
  }
  return plan;
}

/** The plan a renewal charges for: the pending plan if one is chosen, else the current one (deleted or inactive plans still renew). */
export async function renewalPlan(tx: TxContext, planId: string) {
  return tx.db.selectFrom('plans').selectAll().where('id', '=', planId).executeTakeFirstOrThrow();
}
