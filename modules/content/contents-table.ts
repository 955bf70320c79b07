import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { ContentFields } from './content.fields.ts';

/** The contents table (migrations/content), for typed queries outside the generic operations: derived from the fields. */
export type ContentsTable = EntityTable<ContentFields>;

declare module '../../framework/contracts/database.ts' {
  interface Database {
    contents: ContentsTable;
  }
}
