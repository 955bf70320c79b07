import Type from 'typebox';

/** A limit name and its value; null: no bound. */
const LimitValue = Type.Union([Type.Integer({ minimum: 0, maximum: 9007199254740991 }), Type.Null()]);

/** One limit as the tenant stands with it. */
export const LimitStanding = Type.Object(
  {
    name: Type.String({ description: 'The declared limit, e.g. user.seats.' }),
    unit: Type.String({ description: 'What one unit is, e.g. seats, bytes, endpoints, tokens.' }),
    description: Type.String({ description: 'What the limit counts.' }),
    value: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'The most the tenant may hold; null: no bound.',
    }),
    use: Type.Integer({ minimum: 0, description: 'What the tenant holds now.' }),
  },
  { additionalProperties: false, title: 'LimitStanding' },
);

/** GET /api/v1/billing/entitlements. */
export const EntitlementsAnswer = Type.Object(
  {
    features: Type.Array(Type.String(), {
      description: 'The declared features the tenant’s plan grants (every declared one without a plan, by default).',
    }),
    limits: Type.Array(LimitStanding, { description: 'Every declared limit, with its value and the current use.' }),
  },
  { additionalProperties: false, title: 'Entitlements' },
);

/** The operator's override of one tenant (PUT /api/v1/tenant/tenants/{id}/entitlements): body and answer. */
export const EntitlementOverride = Type.Object(
  {
    features: Type.Optional(
      Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 200 }), Type.Null()], {
        description:
          'Replaces the plan’s features for this tenant (declared names; an unknown one is 422). Left out or null: the plan’s.',
      }),
    ),
    limits: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 100 }), LimitValue, {
        maxProperties: 100,
        description:
          'Over the plan’s limits for this tenant: a value replaces the plan’s, null lifts the limit. A limit left out keeps the plan’s.',
        examples: [{ 'user.seats': 50, 'file.storage_bytes': null }],
      }),
    ),
  },
  { additionalProperties: false, title: 'EntitlementOverride' },
);
