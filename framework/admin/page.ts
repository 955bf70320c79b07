import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { Access, RouteDefinition } from '../entity/define.ts';
import type { TxContext } from '../context/tx.ts';
import type { Services } from '../services.ts';
import type { ProblemError } from '../errors.ts';
import { registerRoute } from '../http/register-route.ts';
import { HtmlPage } from './html.ts';
import { renderAdminPage, type AdminView } from './shell.ts';
import type { ServedSidebarEntry } from './sidebar.ts';
import type { ReadinessCheck } from '../http/probes.ts';
import { allows } from './allows.ts';
import { issueFormToken } from '../access/form-token.ts';

/**
 * The admin site: the fastify scope every admin page lives in (prefix /admin, HTML error pages,
 * the anonymous redirect), the services, and what the shell learns while pages register.
 */
export interface AdminSite {
  /** The /admin scope: register pages with registerAdminPage(site, ...), not app.get. */
  readonly app: FastifyInstance;
  readonly services: Services;
  /** Every GET page's path and access: the sidebar shows an entry by its page's access. */
  readonly pages: Map<string, Access>;
  /** `${method} ${path}` → the page's access and how it re-renders after its handler threw (a form with its errors). */
  readonly routes: Map<string, { access: Access; onError?: AdminErrorRenderer }>;
  /** The served sidebar entries, resolved once every page is registered. */
  sidebar: readonly ServedSidebarEntry[];
  /** The readiness checks /ready runs (the dashboard and the health page show them). */
  readonly readinessChecks: readonly ReadinessCheck[];
}

/** Registers hand-written admin pages on the site (registerAdminPage), once, at startup: the framework's fixed pages and each module's `admin.pages`. */
export type AdminPagesRegistrar = (site: AdminSite) => void;

/** What a page handler receives: the route's context (inside the guarded transaction) plus the shell's helpers. */
export interface AdminPageContext {
  tx: TxContext;
  request: FastifyRequest;
  reply: FastifyReply;
  services: Services;
  params: Record<string, string>;
  query: Record<string, unknown>;
  /** A POST's form fields as posted (the CSRF field already checked and removed). */
  body: Record<string, unknown>;
  /** The page in the layout (sidebar, badge, sign-out); an htmx request for a part gets `view.fragment` alone. */
  render(view: AdminView): Promise<string>;
  /** 303 See Other to a local path (post/redirect/get); returns the empty body to answer. */
  redirect(location: string): string;
  /** Would a route guarded by this access let the caller in (operator check and guard, as the wrapper runs them)? */
  can(access: Access): boolean;
  /** The CSRF token a form on this page repeats in its `csrf` field. */
  csrf(): string;
}

/**
 * Re-renders a page after its handler threw a problem, in a fresh guarded transaction (the failed
 * one rolled back): e.g. the form again, with the problem's errors beside their fields. Null: the
 * shell's error page instead.
 */
export type AdminErrorRenderer = (ctx: AdminPageContext, problem: ProblemError) => Promise<string | null>;

export interface AdminPageDefinition {
  method?: 'GET' | 'POST';
  /** The full path, starting /admin (fastify parameters allowed: /admin/x/:id). */
  path: string;
  /** Exactly the access of the API route the page mirrors: 'signedIn' or { permission }. */
  access: Access;
  /** One line, for logs and the route's summary. */
  summary: string;
  schema?: { params?: TSchema; querystring?: TSchema };
  /** Events the page's work may publish (the API route's list, when it runs the API route's work). */
  publishes?: readonly string[];
  handler(ctx: AdminPageContext): Promise<string>;
  /** Renders the page again after the handler threw (e.g. a form with inline errors); default: the error page. */
  onError?: AdminErrorRenderer;
}

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
export function registerAdminPage(site: AdminSite, page: AdminPageDefinition): void {
  const method = page.method ?? 'GET';
  const prefix = site.app.prefix;
  if (!page.path.startsWith(prefix)) throw new Error(`admin page ${page.path} lies outside ${prefix}`);
  if (method === 'GET') site.pages.set(page.path, page.access);
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
    hidden: true,
    // A personal access token is no session: the shell ignores it (the page sees an anonymous caller).
    bearer: false,
    form: method === 'POST',
    ...(page.publishes ? { publishes: page.publishes } : {}),
    schema: {
      ...(page.schema?.params ? { params: page.schema.params } : {}),
      ...(page.schema?.querystring ? { querystring: page.schema.querystring } : {}),
      response: { 200: HtmlPage(page.summary) },
    },
    handler: async ({ tx, request, reply, services, params, query, body }) => {
      const ctx = pageContext(site, { tx, request, reply, services, params, query, body });
      return page.handler(ctx);
    },
  };
  registerRoute(site.app, site.services, route);
}

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
    params: (base.params ?? {}) as Record<string, string>,
    query: (base.query ?? {}) as Record<string, unknown>,
    body: (typeof base.body === 'object' && base.body !== null ? base.body : {}) as Record<string, unknown>,
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
