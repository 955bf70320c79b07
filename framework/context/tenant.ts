/** What the request path knows of a tenant once its host resolved. */
export interface TenantRef {
  id: string;
  slug: string;
  isOperator: boolean;
  /**
   * The web origins the tenant lists for cross-origin API clients (tenants.cors_origins,
   * http/cors.ts): set on a tenant its host resolved to, absent where a tenant is known by id.
   */
  corsOrigins?: readonly string[];
}

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
