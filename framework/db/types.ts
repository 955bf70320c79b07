import type { ColumnType, Generated } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

/**
 * Tables known to the framework. Modules add their own tables by declaration merging, an entity's
 * derived from its fields (./entity-table.ts):
 *   declare module '../../framework/db/types.ts' { interface Database { tasks: EntityTable<TaskFields> } }
 */
export interface Database {
  tenants: {
    id: Generated<string>;
    slug: string;
    name: string;
    status: Generated<'active' | 'suspended'>;
    is_operator: Generated<boolean>;
    created_at: Generated<Date>;
    updated_at: Generated<Date>;
  };
  tenant_hosts: {
    host: string;
    tenant_id: string;
    is_primary: Generated<boolean>;
    created_at: Generated<Date>;
  };
  outbox: {
    id: Generated<string>;
    event_id: Generated<string>;
    tenant_id: string;
    name: string;
    payload: unknown;
    actor_id: string | null;
    occurred_at: Generated<Date>;
    relayed_at: Timestamp | null;
    request_id: string | null;
    traceparent: string | null;
  };
  audit_events: {
    tenant_id: Generated<string>;
    event_id: string;
    name: string;
    actor_id: string | null;
    occurred_at: Timestamp;
    payload: unknown;
    recorded_at: Generated<Date>;
    request_id: Generated<string | null>;
  };
  processed_events: {
    tenant_id: Generated<string>;
    subscription: string;
    event_id: string;
    processed_at: Generated<Date>;
  };
  idempotency_keys: {
    tenant_id: Generated<string>;
    user_id: string;
    key: string;
    request_hash: Buffer;
    status: number | null;
    body: unknown;
    location: string | null;
    created_at: Timestamp;
  };
  dead_letters: {
    id: Generated<string>;
    queue: string;
    event_id: string | null;
    tenant_id: string | null;
    name: string | null;
    error: string;
    payload: unknown;
    failed_at: Generated<Date>;
  };
  /** Imports as jobs (framework/bulk/imports/): one row per upload. */
  imports: {
    id: Generated<string>;
    tenant_id: Generated<string>;
    resource: string;
    format: 'csv' | 'ndjson';
    dry_run: boolean;
    status: Generated<'queued' | 'running' | 'done' | 'failed'>;
    storage_key: string | null;
    size: ColumnType<string, number | string, number | string>;
    rows_read: Generated<number>;
    created: Generated<number>;
    refused: Generated<number>;
    lines_done: Generated<number>;
    problem: unknown;
    created_by: string | null;
    created_at: Generated<Date>;
    updated_at: Generated<Date>;
    finished_at: Date | null;
  };
  import_refusals: {
    tenant_id: Generated<string>;
    import_id: string;
    line: number;
    problem: unknown;
  };
  /** A whole tenant's export (framework/bulk/tenant-export/). */
  tenant_exports: {
    id: Generated<string>;
    tenant_id: Generated<string>;
    status: Generated<'queued' | 'running' | 'done' | 'failed'>;
    storage_key: string | null;
    size: ColumnType<string | null, number | string | null, number | string | null>;
    sha256: string | null;
    manifest: unknown;
    problem: unknown;
    created_by: string | null;
    created_at: Generated<Date>;
    updated_at: Generated<Date>;
    finished_at: Date | null;
    expires_at: Date | null;
  };
}
