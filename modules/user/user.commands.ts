import Type from 'typebox';
import type { CommandDefinition } from '../../framework/entity/define.ts';
import { endCredentialsOf } from '../../framework/access/credentials.ts';
import { problem } from '../../framework/errors.ts';
import { assertPasswordPolicy, hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.ts';
import type { UserFields } from './user.fields.ts';
import { publishRolesSet, roleChange } from './roles.ts';
import { usersService } from './users-service.ts';
import { administrators } from './administrators.ts';

export const SetPasswordBody = Type.Object(
  {
    password: Type.String({
      minLength: PASSWORD_MIN_LENGTH,
      maxLength: PASSWORD_MAX_LENGTH,
      description: 'The new password; never stored or shown, only its argon2id hash is kept.',
      // Sent, never read back: the admin form types it into a password input and never echoes it.
      writeOnly: true,
    }),
  },
  { additionalProperties: false },
);

export const RolesBody = Type.Object(
  {
    roles: Type.Array(Type.String({ minLength: 1, maxLength: 63 }), {
      maxItems: 100,
      description: 'The complete set of roles the user holds afterwards; each must exist in this tenant.',
    }),
  },
  { additionalProperties: false },
);

/** Where a person changes their own password: it asks for the one in force. */
export const PASSWORD_CHANGE_ROUTE = 'POST /api/v1/auth/password';

/**
 * invited → active and active → active both store a new hash, end the person's sessions and
 * personal access tokens and publish user.password_set (the same password again still counts as
 * setting it); a deactivated user is refused with 409. Cookie only: a token never sets a password.
 * Nobody sets their own password here (403 USE_PASSWORD_CHANGE): the password change asks for the
 * one in force, so a session left open on someone's desk cannot take the account over.
 */
/** What set-password prepares before its transaction: the new password's hash, kept nowhere but the users row. */
export interface PreparedPassword {
  hash: string;
}

export const setPassword: CommandDefinition<UserFields, typeof SetPasswordBody, string, false, PreparedPassword> = {
  summary: 'Set a user’s password',
  admin: {
    label: 'Set password',
    intro:
      'Sets a new password and signs the person out everywhere, ending their access tokens too. An invited person becomes active.',
    fields: {
      password: { label: 'New password', hint: 'At least 8 characters. Tell the person through a safe channel.' },
    },
  },
  description: `Stores the argon2id hash of the password and makes an invited user active, and ends every session and every personal access token of that person in the same transaction, as a reset does. Setting it again, even to the same password, stores a new hash and publishes user.password_set again. Refused with 409 INVALID_STATE for a deactivated user. Takes the session cookie only: a personal access token never sets a password (401 AUTH_REQUIRED). The caller's own password is refused with 403 USE_PASSWORD_CHANGE: ${PASSWORD_CHANGE_ROUTE} changes it, asking for the current one, and keeps the caller's session and tokens.`,
  body: SetPasswordBody,
  bearer: false,
  problems: { 403: `The caller's own password, which ${PASSWORD_CHANGE_ROUTE} changes (USE_PASSWORD_CHANGE)` },
  // A deactivated user is refused (409 INVALID_STATE, the entity's refusal) before run.
  states: { from: ['invited', 'active'], hint: 'A deactivated person cannot be given a password.' },
  publishes: ['user.password_set'],
  // argon2id costs ~100 ms of CPU: hashed before the transaction opens, so no pool connection is
  // held meanwhile (five at once would hold every connection of a pool of five).
  async beforeTransaction(body, services) {
    assertPasswordPolicy(body.password);
    return { hash: await hashPassword(body.password, services.passwordHasher) };
  },
  // The row is read and locked after the hash was made: its state (states above), and whose it is,
  // are judged here, so a user deactivated meanwhile is refused and nothing is stored.
  async run(ctx, row, _body, _services, prepared) {
    if (row.id === ctx.session?.userId) {
      throw problem(
        'USE_PASSWORD_CHANGE',
        `You cannot set your own password here: change it with ${PASSWORD_CHANGE_ROUTE}, which asks for the current one`,
        { extensions: { route: PASSWORD_CHANGE_ROUTE } },
      );
    }
    // The hash through the service (which publishes user.password_set); the status through the
    // returned change, so the answer carries the row as stored.
    await usersService.setPasswordHash(ctx, row.id, prepared.hash);
    // A session or token taken before the new password must not outlive it.
    await endCredentialsOf(ctx, row.id);
    return { status: 'active' };
  },
};

/** Replaces the role set; the same set in any order or spelling changes nothing and publishes nothing. */
export const setRoles: CommandDefinition<UserFields, typeof RolesBody> = {
  summary: 'Set the roles a user holds',
  admin: {
    label: 'Roles',
    intro: 'Sets every role the person holds; roles left out are taken away.',
    fields: {
      roles: {
        label: 'Roles',
        hint: 'The names of the roles, like admin or support. Each must exist on the Roles page.',
      },
    },
  },
  description:
    'Sends the complete role set. Names are trimmed, lower-cased, deduplicated and sorted before they are stored; a name no role of this tenant has is refused with 422 ROLE_UNKNOWN. The same set in any order changes nothing and publishes nothing; a different set publishes user.roles_set. A set that would leave the tenant with no active user holding every permission (*) is refused with 409 LAST_ADMINISTRATOR. Takes the session cookie only: a personal access token never changes roles (401 AUTH_REQUIRED).',
  body: RolesBody,
  bearer: false,
  problems: { 409: 'The set would leave the tenant with no active user holding every permission (LAST_ADMINISTRATOR)' },
  publishes: ['user.roles_set'],
  async run(ctx, row, body) {
    const change = await roleChange(ctx, row.roles, body.roles);
    if (!change) return;
    await administrators.assertOneRemains(ctx, { user: row, roles: change.after });
    publishRolesSet(ctx, row.id, change);
    return { roles: change.after };
  },
};

/**
 * Stops sign-in at once (sessions of a non-active user resolve to nobody) and publishes
 * user.deactivated, on which the sign-in area ends the person's sessions. Repeating changes nothing.
 */
export const deactivate: CommandDefinition<UserFields> = {
  summary: 'Deactivate a user',
  admin: { label: 'Deactivate', intro: 'The person can no longer sign in, and is signed out everywhere.' },
  description:
    "The person can no longer sign in, and their sessions stop counting immediately; the sign-in area deletes them when it handles user.deactivated. Deactivating a deactivated user changes nothing and publishes nothing. Deactivating the tenant's last administrator (the last active user holding every permission, *) is refused with 409 LAST_ADMINISTRATOR. No body.",
  problems: { 409: "The user is the tenant's last administrator (LAST_ADMINISTRATOR)" },
  // Deactivating a deactivated user is accepted and changes nothing (the declared states).
  states: { from: ['invited', 'active'], unchanged: ['deactivated'] },
  publishes: ['user.deactivated'],
  async run(ctx, row) {
    await administrators.assertOneRemains(ctx, { user: row });
    ctx.publish('user.deactivated', { id: row.id });
    return { status: 'deactivated' };
  },
};
