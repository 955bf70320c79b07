import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Static, TObject, TProperties, TSchema } from 'typebox';
import type { Access } from '../entity/route-definition.ts';
import type { Problem } from './problems.ts';
import type { Services } from './services.ts';
import type { SessionInfo, TxContext } from './transaction.ts';

/**
 * The admin shell as a module's pages see it (framework/admin/: the site, its pages, the layout,
 * the sidebar). docs/module-authoring.md, "Admin pages".
 */

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
  /** A gated GET page's path and feature: the sidebar shows its entry locked where the plan lacks it. */
  readonly pageFeatures: Map<string, string>;
  /** `${method} ${path}` → the page's access and how it re-renders after its handler threw (a form with its errors). */
  readonly routes: Map<string, { access: Access; onError?: AdminErrorRenderer }>;
  /** The served sidebar entries, resolved once every page is registered. */
  sidebar: readonly ServedSidebarEntry[];
  /** The readiness checks /ready runs (the dashboard and the health page show them). */
  readonly readinessChecks: readonly ReadinessCheck[];
}

/** Registers hand-written admin pages on the site (registerAdminPage), once, at startup: the framework's fixed pages and each module's `admin.pages`. */
export type AdminPagesRegistrar = (site: AdminSite) => void;

/** The properties of an object schema that declare a default (WithDefault): validation fills them in. */
type DefaultedKeys<P extends TProperties> = { [K in keyof P]: P[K] extends { default: unknown } ? K : never }[keyof P];

/**
 * A schema's value as a handler receives it once validated: its static type, with every property
 * whose schema declares a default present. A schema typed only as TSchema (built at boot from
 * declarations the compiler cannot see) gives a record of unknown values, to be narrowed.
 */
export type Validated<S extends TSchema> =
  unknown extends Static<S>
    ? Readonly<Record<string, unknown>>
    : S extends TObject<infer P extends TProperties>
      ? Static<TObject<Declared<P>>> & { [K in DefaultedKeys<Declared<P>>]-?: Static<Declared<P>[K]> }
      : Static<S>;

/**
 * The properties as declared, a property the schema has only under a condition (`...(searchable ?
 * { q } : {})`) included: its schema, whose own Optional says the key may be absent.
 */
type Declared<P extends TProperties> = { [K in keyof P]-?: Exclude<P[K], undefined> };

/** A page's schemas: its path's parameters and its query string. */
export interface AdminPageSchema {
  params?: TSchema;
  querystring?: TSchema;
}

/** The params a page's handler reads: its params schema's value; a page without one reads none. */
export type PageParams<S extends AdminPageSchema> = S['params'] extends TSchema ? Validated<S['params']> : NoValues;
/** The query a page's handler reads: its querystring schema's value; a page without one reads none. */
export type PageQueryOf<S extends AdminPageSchema> = S['querystring'] extends TSchema
  ? Validated<S['querystring']>
  : NoValues;
/** Nothing to read: a page that declares no schema for its params (or query) reads none of them. */
export type NoValues = Readonly<Record<never, never>>;

/** The request's parts a page sees, before and inside its transaction. */
export interface AdminRequestParts<
  Params = Readonly<Record<string, string>>,
  Query = Readonly<Record<string, unknown>>,
> {
  request: FastifyRequest;
  reply: FastifyReply;
  services: Services;
  params: Params;
  query: Query;
  /** A POST's form fields as posted (the CSRF field already checked and removed). */
  body: Record<string, unknown>;
}

/**
 * What a page handler receives: the route's context (inside the guarded transaction) plus the
 * shell's helpers. `params` and `query` are typed from the page's schemas (AdminPageDefinition);
 * the defaults are the loose shapes an error renderer sees, whose request may have failed validation.
 */
export interface AdminPageContext<Params = Readonly<Record<string, string>>, Query = Readonly<Record<string, unknown>>>
  extends AdminRequestParts<Params, Query> {
  tx: TxContext;
  /** What the page's beforeTransaction returned (undefined when it has none or did not run). */
  prepared?: unknown;
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
 * shell's error page instead. Its context's params and query are as sent (loosely typed): the
 * problem may be their own refusal.
 */
export type AdminErrorRenderer = (ctx: AdminPageContext, problem: Problem) => Promise<string | null>;

/**
 * One hand-written page. Its handler's `params` and `query` are typed from `schema` (TypeBox), with
 * the defaults the schema declares filled in: a key the schema lacks does not compile.
 */
export interface AdminPageDefinition<S extends AdminPageSchema = AdminPageSchema> {
  method?: 'GET' | 'POST';
  /** The full path, starting /admin (fastify parameters allowed: /admin/x/:id). */
  path: string;
  /** Exactly the access of the API route the page mirrors: 'signedIn' or { permission }. */
  access: Access;
  /** And its feature, when the API route is gated by one (a gated entity's pages): 403 FEATURE_NOT_IN_PLAN without it. */
  feature?: string;
  /** One line, for logs and the route's summary. */
  summary: string;
  schema?: S;
  /** Events the page's work may publish (the API route's list, when it runs the API route's work). */
  publishes?: readonly string[];
  /**
   * For a page that runs an API route with a step before its transaction
   * (RouteDefinition.beforeTransaction, e.g. a command that hashes a password): runs that step
   * (framework/admin/api-route.ts, prepareApiRoute) with no transaction open, once the caller has
   * been guarded; what it returns is the handler's `ctx.prepared`. Undefined when there is
   * nothing to prepare for this request (the form asked again).
   */
  beforeTransaction?(ctx: AdminPrepareContext<PageParams<S>, PageQueryOf<S>>): Promise<unknown>;
  handler(ctx: AdminPageContext<PageParams<S>, PageQueryOf<S>>): Promise<string>;
  /** Renders the page again after the handler threw (e.g. a form with inline errors); default: the error page. */
  onError?: AdminErrorRenderer;
}

/** What a page's beforeTransaction gets: the request, its validated parts and its guarded caller; no transaction. */
export interface AdminPrepareContext<
  Params = Readonly<Record<string, string>>,
  Query = Readonly<Record<string, unknown>>,
> extends AdminRequestParts<Params, Query> {
  session: SessionInfo | null;
}

/**
 * One page for the layout (templates/admin/layout.eta). The content is either `body` (HTML the
 * caller rendered, e.g. with renderTemplate) or `template` + `data` (rendered here, escaped by
 * default). `fragment`, when given, is what an htmx request receives instead of the whole page
 * (e.g. a list's rows, a form with its errors). `status` sets the answer's status (default 200).
 */
export interface AdminView {
  title: string;
  body?: string;
  template?: string;
  data?: object;
  fragment?: string;
  status?: number;
}

/** One navigation entry: a label, the admin path it opens, and its place in the sidebar (lower first). */
export interface SidebarEntry {
  label: string;
  path: string;
  order: number;
}

/** A served entry: with the access of the page route at its path. */
export interface ServedSidebarEntry extends SidebarEntry {
  access: Access;
  /** The feature of the page at its path, when gated. */
  feature?: string;
}

/** A check /ready runs (framework/http/probes.ts); the dashboard and the health page show them. */
export interface ReadinessCheck {
  name: string;
  check(): Promise<void>;
}
