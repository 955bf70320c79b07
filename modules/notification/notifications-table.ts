import type { Generated } from 'kysely';

/** The notifications table (migrations/notification), for typed queries of this module. */
export interface NotificationsTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  recipient_id: string;
  title: string;
  body: Generated<string>;
  link: Generated<string>;
  read_at: Date | null;
  created_at: Generated<Date>;
}

declare module '../../framework/contracts/database.ts' {
  interface Database {
    notifications: NotificationsTable;
  }
}
