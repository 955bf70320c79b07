import { declareUniqueKeys } from '../../framework/db/unique-keys.ts';

// What each unique key of the billing tables protects (migrations/billing), for the 409 a
// violation answers: the field, never the index's name.
declareUniqueKeys({
  plans_code_unique: { fields: ['code'], detail: 'A live plan with this code already exists' },
  subscriptions_one_per_tenant: { fields: [], detail: 'This tenant has its subscription already' },
  billing_charges_key: { fields: [], detail: 'A charge with this idempotency key is recorded already' },
  billing_sandbox_charges_pkey: { fields: [], detail: 'A charge with this idempotency key is recorded already' },
});
