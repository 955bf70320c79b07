import { createHash } from 'node:crypto';
import type pg from 'pg';
import { PipelinedConnection, brokenBy, type PipelineAnswer } from './pipelined.ts';
import type { Statement } from '../contracts/database.ts';

/**
 * The request path's fixed statements (opening a tenant transaction, the generic operations), sent
 * as named prepared statements: PostgreSQL parses and plans each once per connection instead of on
 * every request, where planning cost more than running them. (A pool set to
 * database.prepared_statements: unnamed sends them unnamed all the same: gathering-client.ts.)
 */
const names = new Map<string, string>();
const deferrable = new Set<string>();

/**
 * A statement's name, from its text alone: the same SQL has the same name in every process and
 * whatever the order statements were first met, and different SQL never shares one (64 bits of
 * SHA-256). A name handed out in arrival order meant different SQL in different processes, so a
 * pooler moving a client between server connections could run another process's statement.
 */
export const statementNameOf = (text: string): string =>
  `tenantry_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;

/** Registers a statement text, built once at boot, to run as a prepared statement; returns it. */
export function prepared(text: string): string {
  if (!names.has(text)) names.set(text, statementNameOf(text));
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

export type { Statement } from '../contracts/database.ts';

/** The name a registered text runs under as a prepared statement; undefined for any other text. */
export const statementName = (text: string): string | undefined => names.get(text);

/** Whether the text was registered with deferred(). */
export const isDeferred = (text: string): boolean => deferrable.has(text);

/** A statement's answer in an exchange: its result, or the error PostgreSQL gave it. */
export type Answer = PipelineAnswer;

/**
 * One exchange with PostgreSQL: BEGIN, the statements and COMMIT issued together on one pool
 * connection in pg's pipeline mode (pipelined.ts): one write, one round trip. Each statement is
 * answered in order with its result or its error; after a failure the later statements fail as
 * in an aborted transaction (25P02) and nothing is kept. Checked out through pool.connect, so it
 * is refused inside a transaction and times out as DB_BUSY. A failure of the connection itself,
 * or of the commit, is thrown.
 */
export async function exchange(pool: pg.Pool, statements: readonly Statement[]): Promise<Answer[]> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await new PipelinedConnection(client).transaction(
      statements.map(({ text, values }) => ({ text, values, name: names.get(text) })),
    );
  } catch (err) {
    // Not PostgreSQL's refusal of a statement: the connection failed, and the pool drops it.
    broken = brokenBy(err);
    throw err;
  } finally {
    client.release(broken);
  }
}
