import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RouteDefinition } from '../entity/define.ts';
import type { TxContext } from '../context/tx.ts';
import type { Services } from '../services.ts';
import type {
  AdminPageContext,
  AdminPageDefinition,
  AdminPageSchema,
  AdminSite,
  PageParams,
  PageQueryOf,
} from '../contracts/admin.ts';
import { registerRoute } from '../http/register-route.ts';
import { HtmlPage } from './html.ts';
import { renderAdminPage } from './shell.ts';
import { allows } from './allows.ts';
import { issueFormToken } from '../access/form-token.ts';

export type {
  AdminErrorRenderer,
  AdminPageContext,
  AdminPageDefinition,
  AdminPageSchema,
  AdminPagesRegistrar,
  AdminPrepareContext,
  AdminSite,
  PageParams,
  PageQueryOf,
  Validated,
} from '../contracts/admin.ts';

const operationIdOf = (method: string, path: string) =>
  `admin-page-${method.toLowerCase()}${
    path
      .replace(/^\/admin/, '')
      .replace(/[^A-Za-z0-9]+/g, '-')
      .replace(/-$/, '') || '-dashboard'
  }`;

/**
 * Registers one admin page through the route wrapper every API route uses
 * (http/register-route.ts): the same operator check, cross-site rule, CSRF form token (POSTs are
 * form targets), guard and tenant transaction. The page is hidden from OpenAPI.
 */
export function registerAdminPage<const S extends AdminPageSchema = Record<never, never>>(
  site: AdminSite,
  page: AdminPageDefinition<S>,
): void {
  const method = page.method ?? 'GET';
  const prefix = site.app.prefix;
  if (!page.path.startsWith(prefix)) throw new Error(`admin page ${page.path} lies outside ${prefix}`);
  if (method === 'GET') site.pages.set(page.path, page.access);
  if (method === 'GET' && page.feature !== undefined) site.pageFeatures.set(page.path, page.feature);
  site.routes.set(`${method} ${page.path}`, {
    access: page.access,
    ...(page.onError ? { onError: page.onError } : {}),
  });
  const route: RouteDefinition = {
    method,
    url: page.path.slice(prefix.length) || '/',
    operationId: operationIdOf(method, page.path),
    summary: page.summary,
    access: page.access,
    ...(page.feature !== undefined ? { feature: page.feature } : {}),
    hidden: true,
    // A personal access token is no session: the shell ignores it (the page sees an anonymous caller).
    bearer: false,
    // The shell posts only forms: any other post (JSON, no body) is refused (415), never run without the token.
    form: method === 'POST' ? 'only' : false,
    ...(page.publishes ? { publishes: page.publishes } : {}),
    schema: {
      ...(page.schema?.params ? { params: page.schema.params } : {}),
      ...(page.schema?.querystring ? { querystring: page.schema.querystring } : {}),
      response: { 200: HtmlPage(page.summary) },
    },
    ...(page.beforeTransaction ? { beforeTransaction: preparePage(page.beforeTransaction) } : {}),
    handler: async ({ tx, request, reply, services, params, query, body, prepared }) => {
      const ctx = pageContext(site, { tx, request, reply, services, params, query, body });
      if (prepared !== undefined) ctx.prepared = prepared;
      // The route validated params and query against the page's schemas (defaults filled in) before this ran.
      return page.handler(ctx as AdminPageContext<PageParams<S>, PageQueryOf<S>>);
    },
  };
  registerRoute(site.app, site.services, route);
}

/** A page's step before its transaction as its route's: the form as posted, the parameters as validated. */
function preparePage<S extends AdminPageSchema>(
  step: NonNullable<AdminPageDefinition<S>['beforeTransaction']>,
): NonNullable<RouteDefinition['beforeTransaction']> {
  return ({ request, reply, services, params, query, body, session }) =>
    step({
      request,
      reply,
      services,
      params: (params ?? {}) as PageParams<S>,
      query: (query ?? {}) as PageQueryOf<S>,
      body: formOf(body),
      session,
    });
}

const formOf = (body: unknown): Record<string, unknown> =>
  (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;

/** Builds a page context around a transaction: the route's, or the error renderer's fresh one. */
export function pageContext(
  site: AdminSite,
  base: {
    tx: TxContext;
    request: FastifyRequest;
    reply: FastifyReply;
    services: Services;
    params: unknown;
    query: unknown;
    body: unknown;
  },
): AdminPageContext {
  const { tx, request, reply, services } = base;
  reply.type('text/html; charset=utf-8');
  const ctx: AdminPageContext = {
    tx,
    request,
    reply,
    services,
    params: (base.params ?? {}) as Readonly<Record<string, string>>,
    query: (base.query ?? {}) as Readonly<Record<string, unknown>>,
    body: formOf(base.body),
    render: (view) => renderAdminPage(site, ctx, view),
    redirect: (location) => {
      reply.code(303).header('location', location);
      return '';
    },
    can: (access) => allows(access, tx.session, tx.tenant, services.registry),
    csrf: () => issueFormToken(request, reply, services.config),
  };
  return ctx;
}
