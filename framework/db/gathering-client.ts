import { Socket } from 'node:net';
import pg from 'pg';

/**
 * A pg client on a socket the framework made and handed to it (pg's `stream` option), so that
 * statements issued together can be gathered into one write by corking that socket: in pipeline
 * mode pg writes each query as it is issued, one write per query otherwise. Nothing of pg's own
 * internals is reached.
 */
export class GatheringClient extends pg.Client {
  readonly socket: Socket;
  constructor(config: pg.ClientConfig = {}) {
    const socket = new Socket();
    super({ ...config, stream: () => socket });
    this.socket = socket;
  }
}

/** Issues fn's queries on the client as one write: the socket is corked while they are issued. */
export function gathered<T>(client: pg.ClientBase, fn: () => T): T {
  const socket = client instanceof GatheringClient ? client.socket : undefined;
  socket?.cork();
  try {
    return fn();
  } finally {
    socket?.uncork();
  }
}

/**
 * A GatheringClient that sends every statement unnamed (database.prepared_statements: unnamed):
 * the name of a query config is dropped before pg sees it, so PostgreSQL parses the statement on
 * each run and nothing is left prepared on the server connection. For a pooler in transaction mode
 * that does not carry prepared statements between transactions (PgBouncer before 1.21): there the
 * next transaction may run on another server connection, where a name is unknown, or means another
 * client's statement. Every query of the pool passes here (pool.query too), whoever built it.
 */
export class UnnamedStatementsClient extends GatheringClient {
  constructor(config: pg.ClientConfig = {}) {
    super(config);
    const query = this.query.bind(this) as (config: unknown, ...rest: unknown[]) => unknown;
    this.query = ((config: unknown, ...rest: unknown[]) => query(unnamed(config), ...rest)) as pg.Client['query'];
  }
}

/** A query config without its name; anything else (a text, a submittable query) as it is. */
function unnamed(config: unknown): unknown {
  if (typeof config !== 'object' || config === null || !('name' in config)) return config;
  if (typeof (config as { submit?: unknown }).submit === 'function') return config;
  const { name: _name, ...rest } = config as pg.QueryConfig;
  return rest;
}
