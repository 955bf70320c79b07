/**
 * Raised at boot when the declarations disagree, among themselves (entity/checks.ts) or with the
 * tables (entity/table-check.ts); the service refuses to start. A file of its own, so that neither
 * check imports the other.
 */
export class BootCheckError extends Error {
  override name = 'BootCheckError';
}
