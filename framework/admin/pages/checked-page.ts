import type { TSchema } from 'typebox';
import type { Access } from '../../entity/define.ts';
import type { TenantRef } from '../../context/tenant.ts';
import { registerRoute } from '../../http/register-route.ts';
import { HtmlPage } from '../html.ts';
import { pageContext, type AdminPageContext, type AdminSite } from '../page.ts';

/** What a page that runs readiness checks receives: no transaction is open while its handler runs. */
export interface CheckedPageContext {
  /** The tenant the host resolved to (the operator's, or a customer's). */
  tenant: TenantRef;
  params: Record<string, string>;
  query: Record<string, unknown>;
  /** Opens the request's guarded transaction (the caller's session) and renders the page in it. */
  inTransaction(fn: (page: AdminPageContext) => Promise<string>): Promise<string>;
}

export interface CheckedPageDefinition {
  path: string;
  access: Access;
  summary: string;
  schema?: { params?: TSchema; querystring?: TSchema };
  handler(ctx: CheckedPageContext): Promise<string>;
}

/**
 * A GET page that runs readiness checks (framework/http/probes.ts). A check reaches the pool, which
 * refuses any checkout from inside a transaction, so the page is a `transaction: 'none'` route:
 * the route wrapper resolves and guards the session in a short transaction of its own (the same
 * refusals as registerAdminPage), the handler runs the checks with no transaction open, then
 * renders in the request's transaction.
 */
export function registerCheckedPage(site: AdminSite, page: CheckedPageDefinition): void {
  const prefix = site.app.prefix;
  if (!page.path.startsWith(prefix)) throw new Error(`admin page ${page.path} lies outside ${prefix}`);
  site.pages.set(page.path, page.access);
  site.routes.set(`GET ${page.path}`, { access: page.access });
  registerRoute(site.app, site.services, {
    method: 'GET',
    url: page.path.slice(prefix.length) || '/',
    operationId: `admin-page-get${
      page.path
        .replace(/^\/admin/, '')
        .replace(/[^A-Za-z0-9]+/g, '-')
        .replace(/-$/, '') || '-dashboard'
    }`,
    summary: page.summary,
    access: page.access,
    hidden: true,
    // A personal access token is no session: the shell ignores it.
    bearer: false,
    transaction: 'none',
    schema: {
      ...(page.schema?.params ? { params: page.schema.params } : {}),
      ...(page.schema?.querystring ? { querystring: page.schema.querystring } : {}),
      response: { 200: HtmlPage(page.summary) },
    },
    handler: async ({ request, reply, services, params, query, transaction }) =>
      page.handler({
        // The route wrapper refuses a request whose host resolved to no tenant before this runs.
        tenant: request.tenant!,
        params: (params ?? {}) as Record<string, string>,
        query: (query ?? {}) as Record<string, unknown>,
        inTransaction: (fn) =>
          transaction((tx) => fn(pageContext(site, { tx, request, reply, services, params, query, body: undefined }))),
      }),
  });
}
