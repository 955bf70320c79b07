import type { AdminPerson } from '../../framework/entity/define.ts';
import './users-table.ts';

/**
 * The signed-in person as the admin shell's header names them (ModuleDefinition.adminPerson):
 * their name and address, which this module keeps. One read by primary key, in the page's
 * transaction, behind the users table's row-level security.
 */
export const adminPerson: AdminPerson = {
  async find(tx, userId) {
    const row = await tx.db
      .selectFrom('users')
      .select(['display_name', 'email'])
      .where('id', '=', userId)
      .executeTakeFirst();
    return row ? { name: row.display_name ?? '', email: row.email } : null;
  },
};
