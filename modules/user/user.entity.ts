import { defineEntity } from '../../framework/entity/define.ts';
import { userFieldText, userFields } from './user.fields.ts';
import { deactivate, setPassword, setRoles } from './user.commands.ts';
import { administrators } from './administrators.ts';
import { refuseTokenCaller } from '../../framework/access/credentials.ts';

/**
 * A person in one tenant. Status and roles belong to the commands, so create and PATCH refuse
 * them and name the route that owns them; a user created here is invited (no password yet).
 * The password hash lives in the table but is no field, so no response, screen or event carries it.
 */
export const user = defineEntity({
  module: 'user',
  name: 'user',
  label: 'User',
  description: 'People in a tenant, with a status and roles.',
  fields: userFields,
  // Both commands write status: deactivate (→ deactivated) and set-password (invited → active).
  // deactivate comes first, so the refusal's `route` stays what it was before set-password was named.
  commandOwned: { status: ['deactivate', 'set-password'], roles: 'roles' },
  // set-password and deactivate declare where they act; a refusal is 409 INVALID_STATE.
  states: { field: 'status', refusal: 'INVALID_STATE' },
  permissions: { read: 'user:read', write: 'user:manage' },
  // A user created here is invited: one more of the plan's seats.
  limit: 'user.seats',
  events: { created: 'user.created', updated: 'user.updated', deleted: 'user.deleted' },
  commands: {
    'set-password': setPassword,
    roles: setRoles,
    deactivate,
  },
  hooks: {
    // The address is where a reset link goes: changing it is changing a credential, which a
    // personal access token never may (401 AUTH_REQUIRED), or a token could mail itself a reset.
    beforeWrite: async (ctx, { op, values, previous }) => {
      if (op === 'update' && values.email !== undefined && values.email.toLowerCase() !== previous?.email.toLowerCase())
        refuseTokenCaller(ctx, "Changing a user's sign-in address");
    },
    // Deleting the tenant's last administrator is 409 LAST_ADMINISTRATOR, like deactivating them.
    beforeDelete: (ctx, { row }) => administrators.assertOneRemains(ctx, { user: row }),
  },
  sortable: ['email', 'displayName', 'status'],
  // The people pickers search by address or name (GET .../users?q=).
  searchable: ['email', 'displayName'],
  // The password hash is a column but no field: no response, screen or event carries it.
  storage: {
    unique: [{ field: 'email', lowerCase: true, message: 'A user with this address already exists in the tenant' }],
    columns: { password_hash: 'text' },
  },
  admin: { title: 'email', columns: ['email', 'displayName', 'status', 'roles'], fieldText: userFieldText },
});
