import pg from 'pg';

/**
 * Several statements sent to PostgreSQL as one pipeline with a single Sync: Bind and Execute per
 * statement (Parse and Describe only the first time a statement runs on a connection), then Sync.
 * PostgreSQL runs everything before a Sync in one implicit transaction, committed at the Sync, and
 * skips the statements after a failed one and rolls back; it sends its answers when it reaches the
 * Sync, so one batch costs one write each way. A Sync per statement (each pg query ends with one)
 * makes PostgreSQL flush and the process read once per statement instead.
 *
 * This is pg's public extension point for queries (a Submittable: pg.Query's subclass, so that
 * pg's pipeline mode takes it), written with pg.Connection's message methods. Its prepared
 * statements have names of their own (`tenantry_b…`), tracked per connection here, so they never
 * meet pg's own bookkeeping of the statements it prepares.
 */

export interface BatchStatement {
  text: string;
  values: readonly unknown[];
  /** Whether to keep the statement prepared on the connection (a fixed text, parsed once per connection). */
  prepare: boolean;
}

export interface BatchResult {
  command: string;
  rowCount: number | null;
  rows: Record<string, unknown>[];
  fields: readonly Field[];
}

/** A statement's answer: its result, or the error PostgreSQL gave it (or `skipped`). */
export type BatchAnswer = { ok: true; result: BatchResult } | { ok: false; error: Error };

export interface BatchOutcome {
  answers: BatchAnswer[];
  /** Every statement succeeded and the implicit COMMIT failed (a deferred constraint): nothing was kept. */
  commitError?: Error;
  /** The connection failed (not PostgreSQL's refusal of a statement): the pool must drop it. */
  connectionError?: Error;
  /** A value pg cannot serialise: nothing was sent, and the connection is as it was. */
  unsent?: Error;
}

interface Field {
  name: string;
  dataTypeID: number;
}
type Parser = (value: string) => unknown;
interface Shape {
  fields: readonly Field[];
  parsers: Parser[];
}

/** What a connection holds of this module's prepared statements, by name. */
interface Prepared {
  /** False after a failure that may or may not have left the statement parsed: close it before parsing again. */
  certain: boolean;
  /** The row shape, known once its Describe was answered: later runs send no Describe. */
  shape?: Shape;
}

const names = new Map<string, string>();
const preparedOn = new WeakMap<pg.Connection, Map<string, Prepared>>();
const { prepareValue } = (pg as unknown as { utils: { prepareValue(value: unknown): string | Buffer | null } }).utils;
// pg's reading of a CommandComplete tag: `INSERT oid rows`, or `COMMAND rows`.
const COMMAND = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/;

const nameOf = (text: string): string => {
  let name = names.get(text);
  if (!name) names.set(text, (name = `tenantry_b${names.size + 1}`));
  return name;
};

/**
 * A failure of the connection rather than PostgreSQL's refusal of a statement: a socket error (no
 * severity), or a FATAL or PANIC after which the server ends the session (an administrator's
 * pg_terminate_backend, a shutdown).
 */
function endsSession(error: Error): boolean {
  const severity = (error as { severity?: string }).severity;
  return severity === undefined || severity === 'FATAL' || severity === 'PANIC';
}

/** The error PostgreSQL would give a statement after a failed one in a transaction. */
function skipped(): Error {
  return Object.assign(new Error('current transaction is aborted, commands ignored until end of transaction block'), { severity: 'ERROR', code: '25P02' });
}

interface Step {
  name: string;
  prepared: Prepared | undefined;
  /** Parse sent by this batch. */
  parsed: boolean;
  /** Describe sent by this batch: its answer is a RowDescription, or nothing before CommandComplete (NoData). */
  described: boolean;
  shape?: Shape;
}

export class PipelineBatch extends pg.Query {
  readonly outcome: Promise<BatchOutcome>;
  private settle!: (outcome: BatchOutcome) => void;
  private readonly steps: Step[] = [];
  private readonly answers: BatchAnswer[] = [];
  private pendingRows: Record<string, unknown>[] = [];
  private settled = false;
  private held: Map<string, Prepared> | undefined;
  private unsent: Error | undefined;

  readonly statements: readonly BatchStatement[];

  constructor(statements: readonly BatchStatement[]) {
    super(''); // a string: pg copies a config object's properties one by one, on every request
    this.statements = statements;
    this.outcome = new Promise((resolve) => (this.settle = resolve));
    this.submit = (connection) => this.send(connection);
  }

  private send(connection: pg.Connection): Error | null {
    let values: (string | Buffer | null)[][];
    try {
      values = this.statements.map((s) => s.values.map(prepareValue));
    } catch (err) {
      this.unsent = err as Error;
      return this.unsent;
    }
    let held = preparedOn.get(connection);
    if (!held) preparedOn.set(connection, (held = new Map()));
    this.held = held;
    this.statements.forEach((statement, i) => {
      const name = statement.prepare ? nameOf(statement.text) : '';
      const prepared = name ? held.get(name) : undefined;
      const parse = !prepared || !prepared.certain;
      if (parse) {
        if (prepared) connection.close({ type: 'S', name }, false);
        connection.parse({ name, text: statement.text, types: [] }, false);
        if (name) held.set(name, { certain: true });
      }
      connection.bind({ statement: name, values: values[i]! }, false);
      const shape = parse ? undefined : prepared?.shape;
      if (!shape) connection.describe({ type: 'P', name: '' }, false);
      connection.execute({ portal: '' }, false);
      this.steps.push({ name, prepared: name ? held.get(name) : undefined, parsed: parse, described: !shape, shape });
    });
    connection.sync();
    return null;
  }

  private get step(): Step | undefined {
    return this.steps[this.answers.length];
  }

  handleRowDescription(message: { fields: Field[] }): void {
    const step = this.step;
    if (!step) return;
    step.shape = { fields: message.fields, parsers: message.fields.map((f) => pg.types.getTypeParser(f.dataTypeID, 'text') as Parser) };
    if (step.prepared) step.prepared.shape = step.shape;
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    const shape = this.step?.shape;
    if (!shape) return;
    const row: Record<string, unknown> = {};
    const values = message.fields;
    for (let i = 0; i < values.length; i++) {
      const raw = values[i];
      row[shape.fields[i]!.name] = raw === null ? null : shape.parsers[i]!(raw!);
    }
    this.pendingRows.push(row);
  }

  handleCommandComplete(message: { text: string }): void {
    const step = this.step;
    if (!step) return;
    if (step.described && !step.shape && step.prepared) step.prepared.shape = { fields: [], parsers: [] };
    const match = COMMAND.exec(message.text);
    const count = match?.[3] ?? match?.[2];
    const rowCount = count !== undefined ? Number(count) : null;
    this.answers.push({ ok: true, result: { command: match?.[1] ?? message.text, rowCount, rows: this.pendingRows, fields: step.shape?.fields ?? [] } });
    this.pendingRows = [];
  }

  handleEmptyQuery(): void {
    this.answers.push({ ok: true, result: { command: '', rowCount: null, rows: [], fields: [] } });
  }

  handleError(error: Error): void {
    if (this.settled) return;
    this.settled = true;
    if (error === this.unsent) {
      this.settle({ answers: [], unsent: error });
      return;
    }
    if (endsSession(error)) {
      this.settle({ answers: this.answers, connectionError: error });
      return;
    }
    const failed = this.answers.length;
    if (failed === this.statements.length) {
      this.settle({ answers: this.answers, commitError: error });
      return;
    }
    // The failed statement's Parse may or may not have succeeded; the later ones never ran.
    this.forgetFrom(failed);
    this.answers.push({ ok: false, error });
    while (this.answers.length < this.statements.length) this.answers.push({ ok: false, error: skipped() });
    this.settle({ answers: this.answers });
  }

  /**
   * Parse state after a failure at index `from`: that statement's Parse may or may not have
   * succeeded (it is closed before its next Parse), and the later ones were skipped unparsed.
   */
  private forgetFrom(from: number): void {
    this.steps.forEach((step, i) => {
      if (i < from || !step.parsed || !step.name) return;
      if (i === from) step.prepared!.certain = false;
      else this.held!.delete(step.name);
    });
  }

  handleReadyForQuery(): void {
    if (this.settled) return;
    this.settled = true;
    this.settle({ answers: this.answers });
  }

  handlePortalSuspended(): void {}

  handleCopyInResponse(connection: pg.Connection): void {
    (connection as unknown as { sendCopyFail(message: string): void }).sendCopyFail('COPY is not supported in a batch');
  }

  handleCopyData(): void {}
}
