import Type from 'typebox';
import { WithDefault } from '../../framework/entity/storage.ts';

/** The fields of a user as the API shows them; the password hash is deliberately not one. */
export const userFields = {
  email: Type.String({ format: 'email', minLength: 3, maxLength: 320, description: 'The address the person signs in with; unique in the tenant, compared case-insensitively.' }),
  displayName: Type.Optional(WithDefault(Type.String({ maxLength: 200, description: 'Name shown to others; empty when not given.' }), '')),
  status: WithDefault(
    Type.Union(
      [Type.Literal('invited'), Type.Literal('active'), Type.Literal('deactivated')],
      { description: 'invited (cannot sign in yet), active, or deactivated. Set by the set-password and deactivate commands.' },
    ),
    'invited',
  ),
  roles: WithDefault(Type.Array(Type.String(), { description: 'Names of the roles held: trimmed, lower-cased, deduplicated, sorted. Set by the roles command.' }), []),
};

export type UserFields = typeof userFields;
