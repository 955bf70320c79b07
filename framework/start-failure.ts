/**
 * The start cannot reach its database: the line names the setting, and the driver's reason, since
 * some of the driver's refusals carry no code (TLS asked of a server without it) and would
 * otherwise print as a defect, with a stack.
 */
export class DatabaseConnectError extends Error {
  override name = 'DatabaseConnectError';
  constructor(setting: string, cause: unknown) {
    super(`cannot connect to the database (${setting}): ${reasonOf(cause)}`);
  }
}

/**
 * What an error says. A connection to a name with several addresses (localhost as ::1 and
 * 127.0.0.1) that all fail is one AggregateError with an empty message: its reasons are its errors'.
 */
function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err instanceof AggregateError && err.message === '') return err.errors.map(reasonOf).join('; ');
  return err.message;
}

/**
 * The one line a failed start prints on stderr (docs/operations.md, "Startup"). Our own refusals
 * and system or database errors (which carry a code) read best as their message; anything else is
 * a defect, and its stack helps.
 */
export function startFailureLine(err: Error & { code?: unknown }): string {
  const known =
    ['ConfigError', 'BootCheckError', 'MigrationError', 'DatabaseConnectError'].includes(err.name) ||
    typeof err.code === 'string';
  return `tenantry: ${known ? reasonOf(err) : (err.stack ?? err.message)}`;
}
