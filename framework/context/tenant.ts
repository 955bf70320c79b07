export type { TenantRef } from '../contracts/tenant.ts';

/** Normalises a Host header: port stripped, lower-cased, trailing dot removed. */
export function normaliseHost(header: string | undefined): string {
  if (!header) return '';
  let host = header.trim().toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    host = end === -1 ? host : host.slice(0, end + 1);
  } else {
    host = host.replace(/:\d*$/, '');
  }
  return host.replace(/\.$/, '');
}
