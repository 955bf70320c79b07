/**
 * The one line a failed start prints on stderr (docs/operations.md, "Startup"). Our own refusals
 * and system or database errors (which carry a code) read best as their message; anything else is
 * a defect, and its stack helps.
 */
export function startFailureLine(err: Error & { code?: unknown }): string {
  const known = ['ConfigError', 'BootCheckError', 'MigrationError'].includes(err.name) || typeof err.code === 'string';
  if (!known) return `tenantry: ${err.stack ?? err.message}`;
  // A connection to a name with several addresses (localhost as ::1 and 127.0.0.1) that all fail
  // is one AggregateError with an empty message: its reasons are its errors'.
  const reasons =
    err instanceof AggregateError && err.message === ''
      ? err.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e)))
      : [err.message];
  return `tenantry: ${reasons.join('; ')}`;
}
