import { defineModule } from '../../framework/entity/define.ts';

export const userModule = defineModule({
  name: 'user',
  description: 'People in a tenant, with a status and roles',
  permissions: [
    { name: 'user:read', description: 'User list and reads; the Users navigation entry' },
    { name: 'user:manage', description: 'Invite, create, update, delete users; set their password and roles; deactivate' },
  ],
  events: ['user.password_set', 'user.invited'],
});
