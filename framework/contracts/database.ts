import type { ColumnType, Generated, Kysely } from 'kysely';
import type pg from 'pg';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;

/**
 * Tables known to the framework. Modules add their own tables by declaration merging, an entity's
 * derived from its fields (framework/db/entity-table.ts):
 *   declare module '../../framework/contracts/database.ts' { interface Database { tasks: EntityTable<TaskFields> } }
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
}

/** The process's database: the request pool (pg's, in pipeline mode) and kysely over it (framework/db/pool.ts). */
export interface Db {
  pool: pg.Pool;
  kysely: Kysely<Database>;
  url: string;
  close(): Promise<void>;
}

/** A SQL text and its parameters. */
export type Statement = { text: string; values: readonly unknown[] };

/** A statement's result, as an exchange answers it (framework/db/pipelined.ts). */
export interface PipelineResult {
  command: string;
  rowCount: number | null;
  rows: Record<string, unknown>[];
  fields: readonly { name: string; dataTypeID: number }[];
}

/** A statement's answer: its result, or the error PostgreSQL gave it. */
export type PipelineAnswer = { ok: true; result: PipelineResult } | { ok: false; error: Error };
