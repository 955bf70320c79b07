import Type from 'typebox';
import { DateTime } from '../../framework/entity/date-time.ts';
import { Currency, Money } from '../../framework/entity/money.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import type { FieldTexts } from '../../framework/entity/field-text.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

export const Status = StringEnum(['trial', 'active', 'past_due', 'cancelled']);

/** The subscription's fields: every one is written by subscribe, cancel or the renewal job only. */
export const subscriptionFields = {
  planId: Type.String({ format: 'uuid', description: 'The plan being served.' }),
  pendingPlanId: Type.Optional(
    Type.String({ format: 'uuid', description: 'The plan chosen by a change of plan, applied at the next renewal.' }),
  ),
  status: Status,
  periodStart: DateTime({ description: 'Start of the period being served (a trial is a period too).' }),
  periodEnd: DateTime({
    description: 'End of the period being served: the renewal job charges for the next period from here.',
  }),
  cancelAtPeriodEnd: WithDefault(Type.Boolean(), false),
  price: Money({
    currency: 'currency',
    minimum: 0,
    maximum: 2147483647,
    description: 'Stamped from the plan when the period started; billed until the next period.',
  }),
  currency: Currency({ description: 'The currency of the price, stamped from the plan.' }),
  trialUsedAt: Type.Optional(DateTime({ description: "When the tenant's one trial was issued." })),
  attemptCount: WithDefault(
    Type.Integer({
      minimum: 0,
      maximum: 2147483647,
      description: 'Failed charge attempts (one per night) since the period became owed.',
    }),
    0,
  ),
  pastDueSince: Type.Optional(DateTime({ description: 'When the first charge for the owed period failed.' })),
  anchorDay: Type.Integer({
    minimum: 1,
    maximum: 31,
    description:
      'Day of the month the subscription started; monthly periods end on it, clamped to short months (31: Feb 28/29).',
  }),
  endedAt: Type.Optional(
    DateTime({
      description: "Set when a cancelled subscription's period is over; the tenant may then subscribe again.",
    }),
  ),
};
export type SubscriptionFields = typeof subscriptionFields;

/** What a person reads about each field in the admin shell (the descriptions above are the API's). */
export const subscriptionFieldText: FieldTexts<keyof SubscriptionFields & string> = {
  planId: {
    label: 'Plan',
    hint: 'The plan being paid for.',
    messages: { format: 'Choose a plan.', required: 'Choose a plan.', reference: 'Choose a plan.' },
  },
  pendingPlanId: { label: 'Next plan', hint: 'The plan that starts at the next renewal, after a change of plan.' },
  status: { label: 'Status', hint: 'Trial, active, past due (a payment failed) or cancelled.' },
  periodStart: { label: 'Period start', hint: 'When the period being paid for started.' },
  periodEnd: { label: 'Period end', hint: 'When the period ends and the next one is charged.' },
  cancelAtPeriodEnd: { label: 'Cancels at period end', hint: 'Yes when the subscription stops when the period ends.' },
  price: { label: 'Price', hint: 'What the period costs, in cents (or the currency’s smallest unit).' },
  currency: { label: 'Currency', hint: 'The currency of the price, like EUR.' },
  trialUsedAt: { label: 'Trial used', hint: 'When the one free trial was used.' },
  attemptCount: { label: 'Failed payments', hint: 'How many payment attempts failed since the period became due.' },
  pastDueSince: { label: 'Past due since', hint: 'When the first payment for the period failed.' },
  anchorDay: { label: 'Renewal day', hint: 'The day of the month the subscription renews.' },
  endedAt: { label: 'Ended', hint: 'When a cancelled subscription ended.' },
};
