import type pg from 'pg';
import { gathered } from './gathering-client.ts';
import { PipelineBatch, type BatchAnswer } from './pipeline-batch.ts';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';

/**
 * The request path's fixed statements (opening a tenant transaction, the generic operations), sent
 * as named prepared statements: PostgreSQL parses and plans each once per connection instead of on
 * every request, where planning cost more than running them.
 */
const names = new Map<string, string>();
const deferrable = new Set<string>();

/** Registers a statement text, built once at boot, to run as a prepared statement; returns it. */
export function prepared(text: string): string {
  if (!names.has(text)) names.set(text, `tenantry_${names.size + 1}`);
  return text;
}

/**
 * Registers a prepared statement whose result nobody reads (the outbox insert at the end of a
 * transaction): inside a transaction it is held back and written together with whatever comes
 * next, usually the COMMIT. Its failure is still the error the transaction fails with.
 */
export function deferred(text: string): string {
  deferrable.add(text);
  return prepared(text);
}

/** The same, for a raw pg client: a query config that runs the text as a prepared statement. */
export function preparedQuery(text: string, values: readonly unknown[] = []): pg.QueryConfig {
  prepared(text);
  return { name: names.get(text)!, text, values: [...values] };
}

export type Statement = { text: string; values: readonly unknown[] };

/** A statement as pg takes it: by name when its text was registered as prepared. */
const queryOf = ({ text, values }: Statement): pg.QueryConfig => {
  const name = names.get(text);
  return name ? { name, text, values: [...values] } : { text, values: [...values] };
};

/**
 * The answers of queries issued together on one client, in order; the first failure is the error.
 * Every answer is awaited first, so no later failure (a statement after a failed one, in an
 * aborted transaction) is left unhandled.
 */
async function answersOf(pending: Promise<pg.QueryResult>[]): Promise<pg.QueryResult[]> {
  const settled = await Promise.allSettled(pending);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<pg.QueryResult>).value);
}

/** A statement's answer in an exchange: its result, or the error PostgreSQL gave it. */
export type Answer = BatchAnswer;

/**
 * One exchange with PostgreSQL: the statements sent on one pool connection as one pipeline with a
 * single Sync (`PipelineBatch`), which PostgreSQL runs as one transaction, committed at the Sync:
 * one write, one answer. Each statement is answered in order with its result or its error; after a
 * failure the later statements are skipped (their error says the transaction is aborted) and
 * nothing is kept. Checked out through pool.connect, so it is refused inside a transaction and
 * times out as DB_BUSY. A failure of the connection itself, or of the commit, is thrown.
 */
export async function exchange(pool: pg.Pool, statements: readonly Statement[]): Promise<Answer[]> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const batch = new PipelineBatch(statements.map(({ text, values }) => ({ text, values, prepare: names.has(text) })));
    gathered(client, () => client.query(batch));
    const { answers, commitError, connectionError, unsent } = await batch.outcome;
    if (unsent) throw unsent;
    if (connectionError) {
      // Not PostgreSQL's refusal of a statement: the connection failed, and the pool drops it.
      broken = connectionError;
      throw connectionError;
    }
    // A COMMIT that fails (a deferred constraint) undoes every statement, whatever they answered.
    if (commitError) throw commitError;
    return answers;
  } finally {
    client.release(broken);
  }
}

const BEGIN = 'begin';
const ENDS = new Set(['commit', 'rollback']);
const answered = (command: string) => ({ command, rowCount: 0, rows: [], fields: [], oid: 0 }) as unknown as PostgresQueryResult<never>;

/**
 * The pool as kysely sees it: the same clients, with fewer round trips per transaction. Prepared
 * statements are sent by name. A plain BEGIN is held back and sent with the transaction's first
 * statement, a deferrable statement with the statement after it (the COMMIT): the pool runs in
 * pg's pipeline mode, where a client writes each query as it is issued instead of after the
 * previous answer, so a group issued together costs one round trip (and one write: `gathered`),
 * and is answered in order: an earlier statement's failure is what the group's caller sees. A
 * transaction that ran no statement sends nothing.
 */
export function kyselyPool(pool: pg.Pool): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let inTransaction = false;
    let held: Statement[] = [];
    const send = (statement: Statement) => client.query(queryOf(statement));
    const sendTogether = async (statements: Statement[]) => (await answersOf(gathered(client, () => statements.map(send)))).at(-1)!;
    const wrapped = {
      get processID() {
        return (client as unknown as { processID?: number }).processID;
      },
      release: (destroy?: boolean) => {
        inTransaction = false;
        held = [];
        client.release(destroy);
      },
      query: async (text: string, values: readonly unknown[]) => {
        const statement = { text, values };
        if (text === BEGIN && !inTransaction) {
          inTransaction = true;
          held = [statement];
          return answered('BEGIN');
        }
        if (ENDS.has(text)) {
          inTransaction = false;
          const pending = held;
          held = [];
          // Nothing ran: there is nothing to commit. A rollback drops what was held back.
          if (pending[0]?.text === BEGIN) return answered(text.toUpperCase());
          if (text === 'rollback' || pending.length === 0) return send(statement);
          return sendTogether([...pending, statement]);
        }
        if (inTransaction && deferrable.has(text) && held.length === 0) {
          held = [statement];
          return answered('INSERT');
        }
        if (held.length === 0) return send(statement);
        const pending = held;
        held = [];
        return sendTogether([...pending, statement]);
      },
    };
    return wrapped as unknown as PostgresPoolClient;
  };
  return {
    // The pool's own client class, for kysely's query cancellation on a separate connection.
    Client: (pool as unknown as { Client: PostgresPool['Client'] }).Client,
    options: pool.options,
    connect: async () => {
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = wrap(client);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
  };
}
