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
    /** The operator's override of the tenant's entitlements (framework/entitlements/), or null. */
    entitlements: Generated<{ features?: string[]; limits?: Record<string, number | null> } | null>;
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
    actor_kind: string | null;
    actor_name: string | null;
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
    actor_kind: Generated<string | null>;
    actor_name: Generated<string | null>;
  };
  /** History (framework/history/, migration framework/0014): written by the framework only. */
  revisions: {
    tenant_id: Generated<string>;
    id: string;
    entity: string;
    row_id: string;
    at: Timestamp;
    actor_id: string | null;
    actor_kind: string;
    actor_name: string | null;
    operation: string;
    old_values: Generated<unknown>;
    new_values: Generated<unknown>;
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
  users: UsersTable;
  roles: RolesTable;
  sessions: SessionsTable;
  access_tokens: AccessTokensTable;
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
    /** The personal access token's name, when the upload came with one (the rows created are then the token's). */
    created_by_name: ColumnType<string | null, string | null | undefined, never>;
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

// The identity schema (migrations/framework/0013_identity.sql): the tables the opening statement of
// every transaction reads. A module adds its own columns to one (the user module's address and
// name, auth's token names) by declaration merging into the table's interface, as it adds tables
// to Database:
//   declare module '../../framework/contracts/database.ts' { interface AccessTokensTable { name: string } }

/**
 * users: the core of a person. `status` is the framework's column too (a session resolves only
 * for 'active'), but which statuses exist is the module's that manages people, which declares its
 * type with its own columns.
 */
export interface UsersTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  roles: Generated<string[]>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  deleted_at: Timestamp | null;
}

/** roles: a tenant's name for a set of permissions ('*' grants all). */
export interface RolesTable {
  tenant_id: Generated<string>;
  name: string;
  permissions: Generated<string[]>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** sessions: only the SHA-256 of a session id is stored; opened, touched and ended by the framework (framework/access/sessions.ts). */
export interface SessionsTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  id_hash: Buffer;
  user_id: string;
  created_at: Generated<Date>;
  last_seen_at: Generated<Date>;
  expires_at: Date;
  user_agent: Generated<string>;
  ip: Generated<string>;
}

/** access_tokens: personal access tokens, by the SHA-256 of the token; the framework records their use. */
export interface AccessTokensTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  user_id: string;
  token_hash: Buffer;
  permissions: Generated<string[]>;
  created_at: Generated<Date>;
  expires_at: Date;
  last_used_at: Date | null;
}

/** The process's database: the request pool (pg's, in pipeline mode) and kysely over it (framework/db/pool.ts). */
export interface Db {
  pool: pg.Pool;
  kysely: Kysely<Database>;
  /** Where the pool connects: PostgreSQL, or a pooler in front of it (database.url). */
  url: string;
  /**
   * Where what needs a session of its own connects (database.direct_url, by default the url): the
   * LISTEN connections, pg-boss, migrations. A pooler in transaction mode hands each transaction
   * whichever server connection is free, so a LISTEN, a session's advisory lock or pg-boss's
   * notifications through it would be lost or leak to another client.
   */
  directUrl: string;
  /**
   * database.statement_timeout_ms: set by each transaction the service opens for a request or a
   * job, in its opening statement (context/opening.ts), never at connection start-up (a pooler
   * refuses such a start-up parameter, or drops it). Undefined: the server's own setting.
   */
  statementTimeoutMs: number | undefined;
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
