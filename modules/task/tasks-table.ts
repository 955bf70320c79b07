import type { ColumnType, Generated } from 'kysely';
import type { TaskStatus } from './task-status.ts';

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** The tasks table (migrations/task), for the module's typed queries outside the generic operations. */
export interface TasksTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  title: string;
  description: string | null;
  status: Generated<TaskStatus>;
  priority: 'low' | 'medium' | 'high' | 'critical';
  deadline: Timestamp;
  assignee_id: string | null;
  sla_breached: Generated<boolean>;
  resolved_at: Timestamp | null;
  resolution: string | null;
  created_at: Generated<Date>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  deleted_at: Timestamp | null;
}

declare module '../../framework/db/types.ts' {
  interface Database {
    tasks: TasksTable;
  }
}
