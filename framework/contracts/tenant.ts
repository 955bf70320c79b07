/** What the request path knows of a tenant once its host resolved. */
export interface TenantRef {
  id: string;
  slug: string;
  isOperator: boolean;
}
