import Type from 'typebox';

/** The fields of a user as the API shows them; the password hash is deliberately not one. */
export const userFields = {
  email: Type.String({ format: 'email', minLength: 3, maxLength: 320, description: 'The address the person signs in with; unique in the tenant, compared case-insensitively.' }),
  displayName: Type.Optional(Type.String({ maxLength: 200, description: 'Name shown to others; empty when not given.' })),
  status: Type.Union(
    [Type.Literal('invited'), Type.Literal('active'), Type.Literal('deactivated')],
    { description: 'invited (cannot sign in yet), active, or deactivated. Set by the set-password and deactivate commands.' },
  ),
  roles: Type.Array(Type.String(), { description: 'Names of the roles held: trimmed, lower-cased, deduplicated, sorted. Set by the roles command.' }),
};

export type UserFields = typeof userFields;
