import Type from 'typebox';
import { defineRoute, type AnyRoute } from '../../framework/entity/define.ts';
import type { ResolvedEntity } from '../../framework/entity/resolve.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { entity } from '../../framework/entity/define.ts';
import { user } from './user.entity.ts';
import { userFields } from './user.fields.ts';
import { usersService } from './users-service.ts';
import { answer } from '../../framework/http/entity-route-parts.ts';

export const InvitationBody = Type.Object(
  {
    email: userFields.email,
    displayName: userFields.displayName,
    roles: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 63 }), {
        maxItems: 100,
        description: 'Roles granted with the invitation, in the same transaction; each must exist in this tenant.',
      }),
    ),
  },
  { additionalProperties: false },
);

const resolved: ResolvedEntity = resolveEntity(entity(user));

export const invitationRoute: AnyRoute = defineRoute({
  method: 'POST',
  url: '/api/v1/user/invitations',
  operationId: 'user-user-invite',
  summary: 'Invite a person',
  description:
    'Creates an invited user (who cannot sign in until they set a password through the mailed link) holding the given roles, and publishes user.invited, on which the worker mails the set-password link built on this tenant’s primary host. An address already present, compared case-insensitively, is 409 ALREADY_EXISTS; an unknown role is 422 ROLE_UNKNOWN.',
  tags: ['user'],
  access: { permission: 'user:manage' },
  // An invited user takes a seat (invite.ts).
  entitlements: { limit: 'user.seats' },
  publishes: ['user.invited'],
  schema: { body: InvitationBody, response: { 201: answer(resolved.schemas.row, 'The user invited') } },
  handler: async ({ tx, body, reply }) => {
    const row = await usersService.invite(tx, body);
    reply.code(201).header('location', `${resolved.names.path}/${row.id}`);
    return row;
  },
});
