import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { TaskFields } from './task.fields.ts';

/** The tasks table (migrations/task), for the module's typed queries outside the generic operations: derived from the fields. */
export type TasksTable = EntityTable<TaskFields>;

declare module '../../framework/contracts/database.ts' {
  interface Database {
    tasks: TasksTable;
  }
}
