import { declareUniqueKeys } from '../../framework/db/unique-keys.ts';

// What each unique key the user module adds to users protects (migrations/user), for the 409 a violation answers: the
// field, never the index's name.
declareUniqueKeys({
  users_email_unique: { fields: ['email'], detail: 'A user with this address already exists in the tenant' },
});
