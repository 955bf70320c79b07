import type pg from 'pg';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';

/**
 * The request path's fixed statements (opening a tenant transaction, the generic operations), sent
 * as named prepared statements: PostgreSQL parses and plans each once per connection instead of on
 * every request, where planning cost more than running them.
 */
const names = new Map<string, string>();

/** Registers a statement text, built once at boot, to run as a prepared statement; returns it. */
export function prepared(text: string): string {
  if (!names.has(text)) names.set(text, `tenantry_${names.size + 1}`);
  return text;
}

/** The same, for a raw pg client: a query config that runs the text as a prepared statement. */
export function preparedQuery(text: string, values: readonly unknown[] = []): pg.QueryConfig {
  prepared(text);
  return { name: names.get(text)!, text, values: [...values] };
}

const BEGIN = 'begin';
const held = (command: string) => ({ command, rowCount: 0, rows: [], fields: [], oid: 0 }) as unknown as PostgresQueryResult<never>;

/**
 * The pool as kysely sees it: the same clients, with two savings on every transaction. Prepared
 * statements are sent by name. A plain BEGIN is held back and written together with the
 * transaction's first statement (the pool runs in pipeline mode), so opening a tenant transaction
 * is one round trip; its answer is still checked before that statement's result is returned. A
 * transaction that ran no statement sends neither BEGIN nor COMMIT.
 */
export function kyselyPool(pool: pg.Pool): PostgresPool {
  const clients = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let beginHeld = false;
    const send = (text: string, values: readonly unknown[]) => {
      const name = names.get(text);
      return client.query(name ? { name, text, values: [...values] } : { text, values: [...values] });
    };
    const wrapped = {
      get processID() {
        return (client as unknown as { processID?: number }).processID;
      },
      release: (destroy?: boolean) => {
        beginHeld = false;
        client.release(destroy);
      },
      query: async (text: string, values: readonly unknown[]) => {
        if (text === BEGIN && !beginHeld) {
          beginHeld = true;
          return held('BEGIN');
        }
        if (!beginHeld) return send(text, values);
        beginHeld = false;
        if (text === 'commit' || text === 'rollback') return held(text.toUpperCase());
        // Both written now, answered in order: BEGIN's failure surfaces before this statement's result.
        const [, result] = await Promise.all([client.query(BEGIN), send(text, values)]);
        return result;
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
