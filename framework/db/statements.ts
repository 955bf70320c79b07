import type pg from 'pg';
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

type Statement = { text: string; values: readonly unknown[] };

const BEGIN = 'begin';
const ENDS = new Set(['commit', 'rollback']);
const answered = (command: string) => ({ command, rowCount: 0, rows: [], fields: [], oid: 0 }) as unknown as PostgresQueryResult<never>;

/**
 * The pool as kysely sees it: the same clients, with fewer round trips per transaction. Prepared
 * statements are sent by name. A plain BEGIN is held back and written with the transaction's
 * first statement, a deferrable statement with the statement after it (the COMMIT), each group
 * in one write (the pool runs in pipeline mode), and answered in order: an earlier statement's
 * failure is what the group's caller sees. A transaction that ran no statement sends nothing.
 */
export function kyselyPool(pool: pg.Pool): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let inTransaction = false;
    let held: Statement[] = [];
    const send = ({ text, values }: Statement) => {
      const name = names.get(text);
      return client.query(name ? { name, text, values: [...values] } : { text, values: [...values] });
    };
    // Written as one: pg submits synchronously in pipeline mode, the cork gathers the messages.
    const sendTogether = async (statements: Statement[]) => {
      const stream = client.connection.stream;
      stream.cork();
      let answers: Promise<pg.QueryResult>[];
      try {
        answers = statements.map(send);
      } finally {
        stream.uncork();
      }
      return (await Promise.all(answers)).at(-1)!;
    };
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
