import { declareUniqueKeys } from '../../framework/db/unique-keys.ts';

// What each unique key of the billing tables that are no entity's protects (migrations/billing),
// for the 409 a violation answers (a plan's code is its entity's storage.unique).
declareUniqueKeys({
  subscriptions_one_per_tenant: { fields: [], detail: 'This tenant has its subscription already' },
  billing_charges_key: { fields: [], detail: 'A charge with this idempotency key is recorded already' },
  billing_sandbox_charges_pkey: { fields: [], detail: 'A charge with this idempotency key is recorded already' },
});
