import type pg from 'pg';
import {
  AbortedTransactionError,
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { endsSession, issue, settle, type PipelineResult, type PipelineStatement } from './pipelined.ts';
import { isDeferred, statementName } from './statements.ts';

/**
 * Kysely's PostgreSQL dialect (its compiler, adapter and introspector) over a driver of our own,
 * written to kysely's documented Driver and DatabaseConnection interfaces, on a pg pool in
 * pipeline mode. It saves a transaction round trips, and nothing of kysely's wording is matched:
 *
 * - `beginTransaction` sends nothing: the BEGIN is held back and leaves with the transaction's
 *   first statement, in one write (pipelined.ts); a transaction that ran no statement sends nothing;
 * - a statement registered with `deferred()` (the outbox and revision inserts, whose results nobody
 *   reads) is held back inside a transaction and leaves with whatever comes next, usually the
 *   COMMIT; several held back leave together; a failure is still the error the transaction fails with;
 * - a statement registered with `prepared()` runs by name: parsed and planned once per connection.
 */
export class PipelinedDialect implements Dialect {
  private readonly pool: pg.Pool;
  constructor(pool: pg.Pool) {
    this.pool = pool;
  }
  createDriver(): Driver {
    return new PipelinedDriver(this.pool);
  }
  createQueryCompiler() {
    return new PostgresQueryCompiler();
  }
  createAdapter() {
    return new PostgresAdapter();
  }
  createIntrospector(db: Kysely<unknown>) {
    return new PostgresIntrospector(db);
  }
}

class PipelinedDriver implements Driver {
  private readonly pool: pg.Pool;
  private readonly connections = new WeakMap<pg.PoolClient, PipelinedKyselyConnection>();
  constructor(pool: pg.Pool) {
    this.pool = pool;
  }
  async init(): Promise<void> {}
  async acquireConnection(): Promise<DatabaseConnection> {
    const client = await this.pool.connect();
    let connection = this.connections.get(client);
    if (!connection) this.connections.set(client, (connection = new PipelinedKyselyConnection(client)));
    return connection;
  }
  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    (connection as PipelinedKyselyConnection).begin(settings);
  }
  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PipelinedKyselyConnection).end('commit');
  }
  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as PipelinedKyselyConnection).end('rollback');
  }
  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quote(name)}`));
  }
  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${quote(name)}`));
  }
  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release savepoint ${quote(name)}`));
  }
  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    (connection as PipelinedKyselyConnection).release();
  }
  async destroy(): Promise<void> {
    await this.pool.end();
  }
}

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

const beginText = (settings: TransactionSettings): string => {
  if (!settings.isolationLevel && !settings.accessMode) return 'begin';
  return [
    'start transaction',
    settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : '',
    settings.accessMode ?? '',
  ]
    .filter(Boolean)
    .join(' ');
};

const NOTHING: QueryResult<never> = Object.freeze({ rows: [] });

class PipelinedKyselyConnection implements DatabaseConnection {
  private readonly client: pg.PoolClient;
  private inTransaction = false;
  /** Statements held back to leave with the next one: the BEGIN, a deferred statement. */
  private held: PipelineStatement[] = [];
  /** Whether held[0] is the transaction's BEGIN, not yet sent. */
  private beginHeld = false;
  /** The connection failed: the pool drops the client on release. */
  private broken: Error | undefined;

  constructor(client: pg.PoolClient) {
    this.client = client;
  }

  begin(settings: TransactionSettings): void {
    this.inTransaction = true;
    this.beginHeld = true;
    this.held = [{ text: beginText(settings), values: [] }];
  }

  async end(command: 'commit' | 'rollback'): Promise<void> {
    const pending = this.held;
    const nothingRan = this.beginHeld;
    this.inTransaction = false;
    this.beginHeld = false;
    this.held = [];
    // Nothing ran: there is nothing to commit. A rollback drops what was held back.
    if (nothingRan) return;
    const end: PipelineStatement = { text: command, values: [] };
    const result = await this.send(command === 'rollback' ? [end] : [...pending, end]);
    // PostgreSQL completes COMMIT with a ROLLBACK tag when an earlier failure aborted the transaction.
    if (command === 'commit' && result.command === 'ROLLBACK') throw new AbortedTransactionError();
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const text = compiled.sql;
    const statement: PipelineStatement = { text, values: compiled.parameters, name: statementName(text) };
    // Held back only once the transaction has sent its first statement: held then holds deferred
    // statements alone (the revisions' insert, then the outbox's), which leave together with the next.
    if (this.inTransaction && !this.beginHeld && isDeferred(text)) {
      this.held.push(statement);
      return NOTHING;
    }
    const pending = this.held;
    this.held = [];
    this.beginHeld = false;
    const result = await this.send([...pending, statement]);
    const { command, rowCount, rows } = result;
    const affected = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
    return affected ? { numAffectedRows: BigInt(rowCount ?? 0), rows: rows as R[] } : { rows: rows as R[] };
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered by this driver
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries is not supported by the pipelined driver');
  }

  /** Sends the statements as one group (one write, one round trip); the first failure is the error. */
  private async send(statements: PipelineStatement[]): Promise<PipelineResult> {
    const answers = await settle(issue(this.client, statements));
    const failed = answers.find((a) => !a.ok);
    if (failed && !failed.ok) {
      if (endsSession(failed.error)) this.broken = failed.error;
      throw failed.error;
    }
    return (answers.at(-1) as { ok: true; result: PipelineResult }).result;
  }

  release(): void {
    this.inTransaction = false;
    this.beginHeld = false;
    this.held = [];
    const broken = this.broken;
    this.broken = undefined;
    this.client.release(broken);
  }
}
