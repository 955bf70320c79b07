import Type from 'typebox';
import { defineEntity } from '../../framework/entity/define.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { problem } from '../../framework/errors.ts';
import { Currency, Money } from '../../framework/entity/money.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';
import { checkEntitlementNames } from '../../framework/entitlements/limits.ts';
import { FeatureName } from '../../framework/entity/event-names.ts';

/**
 * The operator's price list at /api/v1/billing/plans: every tenant reads the same plans
 * (billing:read); only the operator writes them (billing:catalog). No field is immutable: a change
 * reaches a subscription when its next period starts. A plan some tenant is still on (or will move
 * to at its next renewal) cannot be deleted: 409 PLAN_IN_USE.
 */
export const plan = defineEntity({
  module: 'billing',
  name: 'plan',
  description: 'A plan of the price list. A change applies to subscriptions from their next period.',
  scope: 'global',
  fields: {
    code: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,49}$', description: 'Unique among live plans.' }),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    // Money: the price in the minor unit of the plan's currency (the framework checks the currency is one in use).
    price: Money({ currency: 'currency', minimum: 0, maximum: 2147483647, description: 'What one period costs.' }),
    currency: Currency(),
    interval: StringEnum(['month', 'year']),
    features: WithDefault(
      Type.Array(FeatureName({ minLength: 1, maxLength: 100 }), {
        maxItems: 100,
        description:
          'The features the plan grants: names the modules declare (GET /api/v1/billing/entitlements lists them); an unknown name is 422.',
      }),
      [],
    ),
    // Optional with a default: a plan written without limits has none (adding the field is a compatible change).
    limits: Type.Optional(
      WithDefault(
        Type.Record(
          Type.String({ minLength: 1, maxLength: 100 }),
          Type.Integer({ minimum: 0, maximum: 9007199254740991 }),
          {
            maxProperties: 100,
            description:
              'Declared limit → the most a subscriber may hold, e.g. {"user.seats": 5}; a limit not named has no bound. An unknown name is 422.',
            examples: [{ 'user.seats': 5 }],
          },
        ),
        {},
      ),
    ),
    active: Type.Boolean({
      description: 'Gates new subscriptions, not existence: subscribers of an inactive plan keep renewing.',
    }),
  },
  permissions: { read: 'billing:read', write: 'billing:catalog' },
  sortable: ['code', 'name', 'price'],
  storage: { unique: [{ field: 'code', message: 'A live plan with this code already exists' }] },
  hooks: {
    async beforeWrite(ctx, { values }) {
      checkEntitlementNames(ctx, values as { features?: string[]; limits?: Record<string, number> });
    },
    async beforeDelete(ctx, { row }) {
      const rows = await ctx.db
        .selectNoFrom((eb) => eb.fn<boolean>('billing_plan_in_use', [eb.val(row.id)]).as('used'))
        .execute();
      if (rows[0]?.used) throw problem('PLAN_IN_USE', `plan ${row.code} is still subscribed in some tenant`);
    },
  },
  // The price reads as one amount in its currency ("€9.00"), so the currency needs no column of its own.
  admin: {
    title: 'name',
    columns: ['code', 'name', 'price', 'interval', 'active'],
    fieldText: {
      code: {
        label: 'Code',
        hint: 'A short name for the plan used by other systems, like team-monthly. Unique among the plans.',
        messages: {
          pattern:
            'Use up to 50 lowercase letters, digits and hyphens, starting with a letter or digit, like team-monthly.',
        },
      },
      name: { label: 'Name', hint: 'The plan’s name customers see, like Team.' },
      price: {
        label: 'Price',
        hint: 'What one period costs, in cents (or the currency’s smallest unit): 900 is 9.00 EUR.',
      },
      currency: {
        label: 'Currency',
        hint: 'The three-letter currency, like EUR, USD or JPY.',
        messages: { pattern: 'Use a three-letter currency in capitals, like EUR.' },
      },
      interval: { label: 'Billed every', hint: 'A month or a year.' },
      features: { label: 'Features', hint: 'What the plan includes: the features the modules declare.' },
      limits: {
        label: 'Limits',
        hint: 'The most a subscriber may hold of each limit, like 5 seats. Leave one out for no bound.',
      },
      active: { label: 'On offer', hint: 'Only plans on offer can be chosen. Customers already on a plan keep it.' },
    },
  },
});
