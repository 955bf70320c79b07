import { defineModule, entity } from '../../framework/entity/define.ts';
import { user } from './user.entity.ts';
import { invitationRoute } from './invitation.routes.ts';
import './users-table.ts';
import { userProblems } from './problems.ts';
import { adminPerson } from './admin-person.ts';

export const userModule = defineModule({
  name: 'user',
  description: 'People in a tenant, with a status and roles',
  problems: userProblems,
  permissions: [
    { name: 'user:read', description: 'User list and reads; the Users navigation entry' },
    {
      name: 'user:manage',
      description: 'Invite, create, update, delete users; set their password and roles; deactivate',
    },
  ],
  limits: [
    {
      name: 'user.seats',
      unit: 'seats',
      description: 'People who hold a seat: active and invited users (a deactivated one frees it).',
      use: async (ctx) => {
        const row = await ctx.db
          .selectFrom('users')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('status', 'in', ['active', 'invited'])
          .where('deleted_at', 'is', null)
          .executeTakeFirstOrThrow();
        return Number(row.n);
      },
    },
  ],
  // The seven user events: the entity's three plus the four of its flows.
  events: [
    'user.created',
    'user.updated',
    'user.deleted',
    'user.invited',
    'user.password_set',
    'user.roles_set',
    'user.deactivated',
  ],
  entities: [entity(user)],
  // user.invited is mailed by the sign-in area (modules/auth/invitation-mail.ts): it owns set-password links.
  routes: [invitationRoute],
  // The admin header names the signed-in person by the name and address this module keeps.
  adminPerson,
  admin: {
    label: 'Users',
    sidebar: [{ label: 'Users', path: '/admin/user/users', order: 10 }],
  },
});
