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
