import Type from 'typebox';
import { WithDefault } from '../../framework/entity/storage.ts';
import type { FieldTexts } from '../../framework/entity/field-text.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

/** The fields of a user as the API shows them; the password hash is deliberately not one. */
export const userFields = {
  email: Type.String({
    format: 'email',
    minLength: 3,
    maxLength: 320,
    description:
      'The address the person signs in with (and where a reset link goes); unique in the tenant, compared case-insensitively. Changing it takes the session cookie: with a personal access token it is 401 AUTH_REQUIRED.',
  }),
  displayName: Type.Optional(
    WithDefault(Type.String({ maxLength: 200, description: 'Name shown to others; empty when not given.' }), ''),
  ),
  status: WithDefault(
    StringEnum(['invited', 'active', 'deactivated'], {
      description:
        'invited (cannot sign in yet), active, or deactivated. Set by the set-password and deactivate commands.',
    }),
    'invited',
  ),
  roles: WithDefault(
    Type.Array(Type.String(), {
      description: 'Names of the roles held: trimmed, lower-cased, deduplicated, sorted. Set by the roles command.',
    }),
    [],
  ),
};

export type UserFields = typeof userFields;

/** What a person reads about each field in the admin shell (the descriptions above are the API's). */
export const userFieldText: FieldTexts<keyof UserFields & string> = {
  email: {
    label: 'Email address',
    hint: 'The address the person signs in with. Each person in this tenant has their own.',
  },
  displayName: { label: 'Name', hint: 'The name others see, like Ada Lovelace.' },
  status: {
    label: 'Status',
    hint: 'Invited until the person sets a password, then active; a deactivated person can no longer sign in.',
  },
  roles: { label: 'Roles', hint: 'What the person may do. Change them with the Roles button.' },
};
