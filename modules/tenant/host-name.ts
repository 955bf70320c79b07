import { problem } from '../../framework/errors.ts';

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOST = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);

/**
 * A host as requests will present it after normalisation (lower case, no trailing dot), so the
 * stored value is exactly what the resolver looks up. Anything with a scheme, port or path is refused.
 */
export function normaliseHostName(input: string, pointer = '/body/host'): string {
  const host = input.trim().toLowerCase().replace(/\.$/, '');
  if (host.length > 253 || !HOST.test(host)) {
    throw problem('VALIDATION_FAILED', 'host must be a host name without scheme, port or path', {
      errors: [{ pointer, message: 'not a host name' }],
    });
  }
  return host;
}
