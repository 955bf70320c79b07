import type pg from 'pg';
import { gathered } from './gathering-client.ts';
import type { PipelineAnswer, PipelineResult } from '../contracts/database.ts';

/**
 * Statements issued together on one pg client in pg's pipeline mode (the Pool's and Client's
 * documented `pipeline: true`: a client writes each query as it is issued instead of after the
 * previous answer, and answers them in order), gathered into one write by corking the socket the
 * framework handed the client (`GatheringClient`). So a group costs one round trip however many
 * statements it holds. Each query is pg's own (a query config, by name when prepared): nothing
 * of pg's internals is reached. test/framework/pipelined.test.ts pins the behaviour this relies
 * on: a group's queries all leave before the first answer arrives.
 */

export interface PipelineStatement {
  text: string;
  values: readonly unknown[];
  /** The prepared statement's name: pg parses it once per connection and runs it by name after. */
  name?: string | undefined;
}

// A statement's result and answer are contract types (the one-exchange answer a route reads).
export type { PipelineAnswer, PipelineResult };

/** The query config pg takes for a statement. */
export const queryConfig = ({ text, values, name }: PipelineStatement): pg.QueryConfig =>
  name ? { name, text, values: values as unknown[] } : { text, values: values as unknown[] };

/**
 * A failure of the connection rather than PostgreSQL's refusal of a statement: a socket error (no
 * severity), or a FATAL or PANIC after which the server ends the session (an administrator's
 * pg_terminate_backend, a shutdown).
 */
export function endsSession(error: unknown): boolean {
  const severity = (error as { severity?: string } | undefined)?.severity;
  return severity === undefined || severity === 'FATAL' || severity === 'PANIC';
}

/** The answers of queries issued together, in order: every one is awaited, none left unhandled. */
export async function settle(pending: readonly Promise<pg.QueryResult>[]): Promise<PipelineAnswer[]> {
  const settled = await Promise.allSettled(pending);
  return settled.map(
    (s): PipelineAnswer =>
      s.status === 'fulfilled'
        ? { ok: true, result: s.value as PipelineResult }
        : { ok: false, error: s.reason as Error },
  );
}

/**
 * Issues the statements together on the client (one write) and returns their pending answers.
 * A value pg cannot serialise would make pg skip that one query and send the rest, the COMMIT
 * included: every statement's values are checked first, and nothing is sent unless all pass.
 */
export function issue(client: pg.ClientBase, statements: readonly PipelineStatement[]): Promise<pg.QueryResult>[] {
  if (statements.length > 1) for (const s of statements) assertSendable(s.values);
  return gathered(client, () => statements.map((s) => client.query(queryConfig(s))));
}

/**
 * What pg sends as JSON (a plain object, or an array holding one) must serialise: JSON.stringify
 * throws for a BigInt or a cycle. Strings, numbers, booleans, null, Dates and Buffers always do.
 */
function assertSendable(values: readonly unknown[]): void {
  for (const value of values) {
    if (value === null || typeof value !== 'object' || value instanceof Date || Buffer.isBuffer(value)) {
      if (typeof value === 'bigint' || typeof value === 'symbol' || typeof value === 'function')
        throw new TypeError(`a ${typeof value} is not a statement value`);
      continue;
    }
    JSON.stringify(value);
  }
}

export const BEGIN: PipelineStatement = { text: 'begin', values: [] };
export const COMMIT: PipelineStatement = { text: 'commit', values: [] };

/** Thrown when the connection itself failed during a group: the pool must drop the client. */
export class ConnectionFailed extends Error {
  override name = 'ConnectionFailed';
}

/**
 * A checked-out client seen as a pipeline. `transaction` sends BEGIN, the statements and COMMIT
 * as one group: one write, one round trip. PostgreSQL runs them in order; after a failed
 * statement the later ones fail as in an aborted transaction (25P02) and the COMMIT rolls back.
 */
export class PipelinedConnection {
  readonly client: pg.ClientBase;
  constructor(client: pg.ClientBase) {
    this.client = client;
  }

  /**
   * The statements' answers in order. Thrown instead: a failure of the connection (the error, with
   * the client to be released as broken: see `brokenBy`), or of the COMMIT itself (a deferred
   * constraint), which undoes every statement whatever they answered.
   */
  async transaction(statements: readonly PipelineStatement[]): Promise<PipelineAnswer[]> {
    const answers = await settle(issue(this.client, [BEGIN, ...statements, COMMIT]));
    const broken = answers.find((a) => !a.ok && endsSession(a.error));
    if (broken && !broken.ok) throw Object.assign(broken.error, { [BROKEN]: true });
    const begin = answers[0]!;
    if (!begin.ok) throw begin.error;
    const commit = answers.at(-1)!;
    const inner = answers.slice(1, -1);
    if (!commit.ok && inner.every((a) => a.ok)) throw commit.error;
    return inner;
  }
}

const BROKEN = Symbol('tenantry.connectionBroken');

/** The error a failed group left the client broken by, for pool release(err); undefined otherwise. */
export function brokenBy(err: unknown): Error | undefined {
  return err && typeof err === 'object' && (err as { [BROKEN]?: boolean })[BROKEN] ? (err as Error) : undefined;
}
