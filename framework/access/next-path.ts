export const DEFAULT_LANDING = '/admin';

/**
 * A local path on this host, or the default. "//evil.test" and "/\evil.test" are refused because
 * browsers read both as another host; control characters because some clients strip them first.
 */
export function safeNextPath(next: unknown): string {
  if (typeof next !== 'string' || next.length === 0 || next.length > 2000) return DEFAULT_LANDING;
  if (!next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return DEFAULT_LANDING;
  if (/[\u0000-\u001f\u007f\\]/.test(next)) return DEFAULT_LANDING;
  return next;
}
