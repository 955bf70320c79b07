import type { Statement } from '../db/statements.ts';
import type { Static, TObject, TOptional, TProperties, TSchema, TUnsafe } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PendingEvent, SessionInfo, TxContext } from '../context/tx.ts';
import type { Services } from '../services.ts';
import type { Config } from '../config/schema.ts';
import type { TenantRef } from '../context/tenant.ts';
import type { IncomingHttpHeaders } from 'node:http';
import type { ProblemCode } from '../errors.ts';
import type { EntityStorage } from './storage.ts';
import type { AdminPagesRegistrar } from '../admin/page.ts';
import type { SidebarEntry } from '../admin/sidebar.ts';
import type { IdentityTableName } from '../access/identity-tables.ts';

/** Who may call a route: anybody, anybody (with the session resolved if present), any session, or a permission. */
export type Access = 'public' | 'optional' | 'signedIn' | { permission: string };

export interface PermissionDeclaration {
  name: string;
  description: string;
  /** Operator permissions are refused at every tenant but the operator's, and no customer role may hold them. */
  operator?: boolean;
}

/** The stored values of an entity's fields, as TypeBox infers them. */
export type FieldValues<F extends TProperties> = Static<TObject<F>>;

/** The empty field set: the default for an entity without computed fields. */
// biome-ignore lint/complexity/noBannedTypes: `{}` is exactly the empty property map TypeBox's TProperties admits
export type NoFields = {};

/** A stored value as PostgreSQL hands it back: a date-time (DateTime()) column arrives as a Date. */
type StoredValue<S extends TSchema> = S extends { format: 'date-time' } ? Date : Static<S>;

/**
 * A row as handlers, hooks and commands see it: the fields as they are stored (a date-time is a
 * Date, an optional field left empty is null) plus the system columns. JSON responses still
 * carry ISO strings: the response schemas serialise the Dates.
 */
export type EntityRow<F extends TProperties> = {
  [K in keyof F]: F[K] extends TOptional<TSchema> ? StoredValue<F[K]> | null : StoredValue<F[K]>;
} & {
  id: string;
  createdAt: Date;
  updatedAt: Date;
};

/** Who owns an entity's rows: each tenant its own (the default), or one set every tenant reads. */
export type EntityScope = 'tenant' | 'global';

/** Soft (the default): DELETE sets deleted_at and keeps the row. Hard: DELETE removes the row. */
export type DeleteMode = 'soft' | 'hard';

/** Routes a singleton may declare besides GET and its commands: PUT, PATCH and DELETE. */
export type SingletonRoute = 'replace' | 'update' | 'delete';

/** The row a command runs on: locked; for a singleton, null until the tenant's row exists. */
export type CommandRow<F extends TProperties, S extends boolean = false> = S extends true ? EntityRow<F> | null : EntityRow<F>;

/** Changes a command returns: a date-time may be given as a Date or an ISO string, an optional field cleared with null. */
export type FieldChanges<F extends TProperties> = {
  [K in keyof F]?: (F[K] extends { format: 'date-time' } ? Date | string : Static<F[K]>) | (F[K] extends TOptional<TSchema> ? null : never);
};

/** What a handler may return for a response schema: a date-time property may be a Date (serialised as an ISO string). */
export type Answer<S extends TSchema> =
  S extends TObject<infer P>
    ? Static<TObject<{ [K in keyof P]: P[K] extends { format: 'date-time' } ? (P[K] extends TOptional<TSchema> ? TOptional<TUnsafe<string | Date>> : TUnsafe<string | Date>) : P[K] }>>
    : Static<S>;

/**
 * A command: `POST .../{id}/<command>`. B is its body schema, P the events it publishes; declared
 * through defineCommand, `run` sees the body as its schema's type and its ctx.publish accepts only
 * the events listed in `publishes`.
 */
export interface CommandDefinition<F extends TProperties, B extends TSchema = TSchema, P extends string = string, S extends boolean = false> {
  summary: string;
  description?: string;
  /** Request body schema; omitted when the command takes none. */
  body?: B;
  /** Defaults to the entity's write permission. */
  permission?: string;
  /** Problem answers particular to this command, for OpenAPI: status → description naming the code. */
  problems?: Readonly<Record<number, string>>;
  /**
   * Events this command publishes: each must be declared by a module (boot check), and a publish
   * of any other event (besides the entity's own lifecycle and hook events) fails the request.
   */
  publishes?: readonly P[];
  /**
   * Runs inside the request's transaction with the row locked. Returns the changes to store
   * (command-owned fields included), or nothing when the command changes nothing. The changes are
   * validated against the field schemas before they are written. On a singleton whose row does not
   * exist yet, `row` is null and the values returned are inserted as the new row (nothing returned:
   * the command answers 404, like GET).
   */
  run(ctx: TxContext<P>, row: CommandRow<F, S>, body: Static<B>, services: Services, prepared?: unknown): Promise<FieldChanges<F> | void>;
  /**
   * Work that must happen before the command's transaction with no transaction open, such as a
   * payment: it opens transactions of its own (ctx.transaction) and may call out between them.
   * What it returns reaches `run` as `prepared`; a problem it throws is the answer, and `run` does
   * not run. A command with `prepare` is served as a `transaction: 'none'` route whose command
   * transaction opens after prepare returns.
   */
  prepare?(ctx: CommandPrepareContext<P>, body: Static<B>): Promise<unknown>;
}

/**
 * Declares commands with their types inferred: the row from the entity's fields, the body from
 * its schema, the events `ctx.publish` accepts from `publishes`. Given the fields first, so they
 * are fixed before the command is read (one call inferring all three widens the returned
 * literals and loses the row):
 *
 *   const command = defineCommand(articleFields);
 *   commands: { publish: command({ body, publishes: ['x.published'], async run(ctx, row, body) {...} }) }
 */
export function defineCommand<F extends TProperties, S extends boolean = false>(_fields: F, _options?: { singleton: S }) {
  return <const B extends TSchema = TSchema, const P extends string = never>(command: CommandDefinition<F, B, P, S>): CommandDefinition<F, NoInfer<B>, NoInfer<P>, S> => command;
}

export type WriteOperation = 'create' | 'update' | 'delete' | 'command';

/** What afterWrite learns: the operation, and for a command its name. previous is absent when the row was created. */
export type AfterWriteInput<F extends TProperties, CN extends string = string> =
  | { op: 'create' | 'update' | 'delete'; command?: undefined; row: EntityRow<F>; previous?: EntityRow<F> }
  | { op: 'command'; command: CN; row: EntityRow<F>; previous?: EntityRow<F> };

/** A row as the entity's routes return it: afterRead's result, the computed fields included. */
export type ReadShape<F extends TProperties, C extends TProperties = NoFields> = EntityRow<F> & FieldValues<C>;

/**
 * The lifecycle hooks, all inside the request's transaction, in this order (docs/module-authoring.md):
 * create: beforeWrite → insert → created event → afterWrite → its changes → afterRead.
 * PATCH/PUT: read and lock → beforeWrite → update → updated event → afterWrite → its changes → afterRead.
 * command: read and lock → run → update (or insert) → afterWrite → its changes → afterRead.
 * DELETE: read and lock → beforeDelete → delete → deleted event → afterWrite.
 */
export interface EntityHooks<F extends TProperties, CN extends string = string, C extends TProperties = NoFields> {
  /** Before an insert or update from a request body is written: may adjust the values (command-owned fields included). */
  beforeWrite?(ctx: TxContext, input: { op: 'create' | 'update'; values: Partial<FieldValues<F>>; previous?: EntityRow<F> }): Promise<Partial<FieldValues<F>> | void>;
  /** Before a DELETE, with the row read and locked: throws a problem to refuse it (nothing is deleted or published). */
  beforeDelete?(ctx: TxContext, input: { row: EntityRow<F> }): Promise<void>;
  /**
   * After any write, in the same transaction: follow-up writes and events. May return changes to
   * the row, validated and stored like a command's (publishing the updated event); storing them
   * does not call afterWrite again. A delete's afterWrite may return none.
   */
  afterWrite?(ctx: TxContext, input: AfterWriteInput<F, CN>): Promise<Partial<FieldValues<F>> | void>;
  /** Shapes the row every route of the entity returns (list items, read, create, update, commands), computed fields included. */
  afterRead?(ctx: TxContext, row: EntityRow<F>): ReadShape<F, C> | Promise<ReadShape<F, C>>;
}

/** A row-access filter: field → the value a visible row holds (equality; a null value matches no row). */
export type RowFilter<F extends TProperties> = { readonly [K in keyof F & string]?: Static<F[K]> | null };

/**
 * A public read by a unique field: `GET /api/v1/<module>/<path>/{<by>}`, open to anybody at the
 * tenant's host, answering the public shape of the one live row whose field equals the parameter
 * (and that meets `where`), else 404 NOT_FOUND; a parameter outside its schema is 422. The answer
 * carries a weak ETag, and an If-None-Match naming it is 304 with no body.
 */
export interface PublicReadDefinition<F extends TProperties, S extends TSchema = TSchema> {
  /** The unique field looked up, e.g. 'slug'. */
  by: keyof F & string;
  /** Path segment after the module; default 'public'. */
  path?: string;
  summary?: string;
  description?: string;
  /** Schema of the path parameter (default: the field's own); a mismatch answers 422 VALIDATION_FAILED. */
  param?: TSchema;
  /** Applied to the validated parameter before the lookup, so it is compared the way the field is stored. */
  normalise?(value: string): string;
  /** Values the row must also hold to be public, e.g. { status: 'published' }; other rows answer the same 404. */
  where?: Partial<FieldValues<F>>;
  /** The public shape's schema: the 200 response and its OpenAPI. */
  schema: S;
  /** Turns the row into the public shape; the only fields that leave. */
  shape(row: EntityRow<F>, ctx: TxContext<never>): Answer<S> | Promise<Answer<S>>;
  /** Cache-Control of the 200 and 304 answers (none by default), e.g. 'public, no-cache' to have every cache revalidate. */
  cacheControl?: string;
  /** What the weak ETag derives from; default the row's updatedAt. */
  etag?(row: EntityRow<F>): Date | string;
}

export interface EntityDefinition<
  F extends TProperties,
  CN extends string = string,
  S extends boolean = false,
  C extends TProperties = NoFields,
  PS extends TSchema = TSchema,
> {
  module: string;
  name: string;
  /** Defaults to name + "s"; names the path segment and the table. */
  plural?: string;
  table?: string;
  label?: string;
  description?: string;
  fields: F;
  /**
   * 'tenant' (default): the table has tenant_id and row-level security. 'global': one set of rows
   * every tenant reads (no tenant_id, no policy); writes need an operator permission (checked at boot).
   */
  scope?: EntityScope;
  /**
   * One row per tenant, served at /api/v1/<module>/<name> with no id: GET, and POST .../<command>.
   * PUT, PATCH and DELETE only as declared in singletonRoutes.
   */
  singleton?: S;
  /** A singleton's extra routes: 'replace' (PUT, creates or replaces), 'update' (PATCH), 'delete' (DELETE). */
  singletonRoutes?: S extends true ? readonly SingletonRoute[] : never;
  /**
   * Which rows the caller sees, beyond the tenant: applied to list, read, update, delete and
   * commands, so another caller's row answers 404 like an unknown id. Create is not filtered.
   */
  rowAccess?(ctx: TxContext): RowFilter<F>;
  /** 'soft' (default) or 'hard': a hard delete removes the row, and the table needs no deleted_at. */
  deleteMode?: DeleteMode;
  /** Settable on create, refused on PATCH. */
  immutable?: readonly (keyof F & string)[];
  /**
   * Fields only a command writes, each naming the command that owns it, or every command that
   * writes it (`status: ['deactivate', 'set-password']`): the refusal names all of them.
   */
  commandOwned?: { readonly [K in keyof F & string]?: NoInfer<CN> | readonly NoInfer<CN>[] };
  /** Fields only the service sets (hooks, jobs): refused on create and PATCH like id and createdAt. */
  readOnly?: readonly (keyof F & string)[];
  /** Per read-only field: why a body may not name it, as the refusal's detail says (default 'set by the service'). */
  readOnlyReasons?: { readonly [K in keyof F & string]?: string };
  /**
   * Per string field: its stored form (e.g. a slug: NFKC, trimmed, lower-cased), applied to create,
   * PATCH and PUT bodies before they are validated, and to the public read's parameter before the
   * lookup when it reads by that field: a value is stored and looked up the same way every time.
   */
  normalise?: { readonly [K in keyof F & string]?: (value: string) => string };
  /** Per field: the code (a 422 of framework/errors.ts) a value outside the field's schema answers instead of VALIDATION_FAILED. */
  invalidCodes?: { readonly [K in keyof F & string]?: ProblemCode };
  /** Per unique field: the unique index that keeps it unique, and the code (a 409) a duplicate answers instead of ALREADY_EXISTS. */
  uniqueCodes?: { readonly [K in keyof F & string]?: { index: string; code: ProblemCode } };
  /** Fields the created, updated and deleted events carry besides the id (e.g. a slug); never a body or an address. */
  eventFields?: readonly (keyof F & string)[];
  /** Response-only fields afterRead adds (no column, never written): part of the row schema. */
  computed?: C;
  permissions: { read: string; write: string };
  /** Event names override; by default <module>.<entity>.created / .updated / .deleted. */
  events?: { created?: string; updated?: string; deleted?: string };
  /** Extra events the hooks may publish. */
  hookPublishes?: readonly string[];
  hooks?: EntityHooks<F, NoInfer<CN>, NoInfer<C>>;
  commands?: { readonly [K in CN]: CommandDefinition<F, TSchema, string, S> };
  /** A public read route by a unique field (e.g. content pages by slug). */
  publicRead?: PublicReadDefinition<F, PS>;
  /** Fields a list may sort by; createdAt and updatedAt always may. */
  sortable?: readonly (keyof F & string)[];
  /** What the table holds besides the fields: unique fields, references, extra columns (framework/entity/storage.ts). */
  storage?: EntityStorage<F>;
  admin?: { title: keyof F & string; columns: readonly (keyof F & string)[] };
  /**
   * Rarely needed: values the conformance suite merges into the create body it derives from the
   * field schemas, for a field no schema can describe (a reference that must name an existing row).
   * Runs in the tenant's transaction; n varies between calls so unique keys stay unique.
   */
  sample?(ctx: TxContext, n: number): Promise<Partial<FieldValues<F>>>;
  /**
   * As rare: values the conformance suite merges into a command's body it derives from the body
   * schema, when the body must name an existing row (a plan to subscribe to). Runs in the
   * transaction of the tenant the command is sent to.
   */
  sampleCommand?(ctx: TxContext, command: CN, n: number): Promise<Record<string, unknown>>;
}

/**
 * Declares an entity. The generic parameters are inferred, so naming a field the entity does not
 * have in immutable, commandOwned, sortable or admin fails to compile, as does a command-owned
 * field naming an undeclared command.
 */
export function defineEntity<
  const F extends TProperties,
  const CN extends string = never,
  const S extends boolean = false,
  const C extends TProperties = NoFields,
  PS extends TSchema = TSchema,
>(definition: EntityDefinition<F, CN, S, C, PS>): EntityDefinition<F, CN, S, C, PS> {
  return definition;
}

/** Type-erased entity, as the framework stores it after declaration. */
export type AnyEntity = EntityDefinition<TProperties, string, boolean, TProperties>;

export interface RouteSchemas {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  response: { [status: number]: TSchema };
}

export type Infer<T> = T extends TSchema ? Static<T> : undefined;

export interface RouteContext<S extends RouteSchemas> {
  params: Infer<S['params']>;
  query: Infer<S['querystring']>;
  body: Infer<S['body']>;
  request: FastifyRequest;
  reply: FastifyReply;
  services: Services;
}

export interface RouteDefinition<S extends RouteSchemas = RouteSchemas, P extends string = string> {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Full path, e.g. /api/v1/auth/login. */
  url: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: readonly string[];
  access: Access;
  /** 'tenant' (default) runs the handler in a tenant transaction; see NoTxRouteDefinition for 'none'. */
  transaction?: 'tenant';
  schema: S;
  /**
   * Events the handler publishes: each must be declared by a module (boot check); `tx.publish`
   * accepts only these (compile time through defineRoute, run time for every route).
   */
  publishes?: readonly P[];
  /** Largest request body in bytes, past which the answer is 413 PAYLOAD_TOO_LARGE; default 1 MiB. */
  bodyLimit?: number;
  /** Problem answers particular to this route, for OpenAPI: status → description naming the code. */
  problems?: Readonly<Record<number, string>>;
  /** Answers also on hosts with no tenant (only the probes). */
  global?: boolean;
  /**
   * A host with no tenant answers the route's own 404 NOT_FOUND instead of NO_SITE, so a public
   * door (e.g. a public file) says nothing about which hosts are served.
   */
  hidesNoSite?: boolean;
  /**
   * A browser form target (a page's <form method="post">): besides JSON, the route accepts an
   * application/x-www-form-urlencoded body, which must carry the CSRF token field `csrf`
   * (framework/access/form-token.ts). Every other route refuses form-encoded bodies with 415.
   */
  form?: boolean;
  /** Left out of the OpenAPI document: the admin shell's HTML pages, which are no API. */
  hidden?: boolean;
  /**
   * The route's whole database work as one statement, so the request costs one exchange with
   * PostgreSQL: BEGIN, the opening statement, this statement and COMMIT leave in one write. It is
   * built from the validated request before the caller is known, so it must itself find nothing
   * for a caller without the route's permission (`permissionPredicate` in its WHERE); the guard
   * then decides from the opening statement's answer, as for the handler. Only for a route whose
   * access is a permission. Returning undefined (or throwing) leaves the request to the handler.
   */
  oneExchange?(ctx: RouteContext<S>): OneExchange | undefined;
  handler(ctx: RouteContext<S> & { tx: TxContext<P> }): Promise<unknown>;
}

/** One request's statement and what to answer from it (see RouteDefinition.oneExchange). */
export interface OneExchange {
  statement: Statement;
  /** Events the statement's write publishes (its values known in advance): inserted in the same exchange. */
  events?: PendingEvent[];
  /**
   * The response from the statement's rows, once the guard has passed. `more` opens an ordinary
   * transaction for a follow-up the rows could not answer (rare: it costs exchanges of its own).
   */
  answer(rows: Record<string, unknown>[], more: RequestTransaction): Promise<unknown>;
  /** The error a failure of the statement stands for (e.g. a malformed cursor is 422). */
  failed?(err: unknown): unknown;
}

export interface NoTxRouteDefinition<S extends RouteSchemas = RouteSchemas, P extends string = string>
  extends Omit<RouteDefinition<S, P>, 'handler' | 'transaction'> {
  transaction: 'none';
  /**
   * The body is a multipart/form-data form that the handler streams itself with @fastify/multipart
   * (`request.file()`, `request.parts()`), with no transaction open. It needs a Content-Length of at
   * most `bodyLimit` (411 LENGTH_REQUIRED, 413 PAYLOAD_TOO_LARGE); any other content type is 415.
   * `form` documents the form's fields in OpenAPI and is not validated.
   */
  multipart?: { form: TSchema };
  /**
   * session: resolved (and guarded) in a short transaction of its own when access is signedIn or a
   * permission; else null. transaction(fn): opens a transaction in the request's tenant, acting for
   * the caller and held to the route's publish list, and commits it when fn resolves.
   */
  handler(ctx: RouteContext<S> & { session: SessionInfo | null; transaction: RequestTransaction<P> }): Promise<unknown>;
  /**
   * Only for a `public` GET route: the answer it can give from memory as soon as the request
   * arrives, before its parameters are validated and the handler runs, or undefined. It only ever
   * gives what the handler would answer the same (the public read's 304 from the validator cache);
   * when it gives nothing, or throws, the request goes the usual way. The framework sends the
   * answer with no body and the headers every answer carries, either in front of the router (a
   * request whose path needs no decoding, at a host already known: `framework/http/front-door.ts`)
   * or in the route's first hook.
   */
  earlyAnswer?(request: EarlyRequest, services: Services): EarlyAnswer | undefined;
}

/** What an earlyAnswer sees of a request: its method, headers, path parameters and tenant. */
export interface EarlyRequest {
  method: string;
  headers: IncomingHttpHeaders;
  params: Readonly<Record<string, string>>;
  tenant: TenantRef;
}

/** An answer without a body: the status and the headers of its own. */
export interface EarlyAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
}

/** A transaction a `transaction: 'none'` route (or a command's prepare) opens for its request. */
export type RequestTransaction<P extends string = string> = <T>(fn: (tx: TxContext<P>) => Promise<T>) => Promise<T>;

/** What a command's `prepare` gets: no transaction is open; it opens its own. */
export interface CommandPrepareContext<P extends string = string> {
  services: Services;
  tenant: TenantRef;
  session: SessionInfo | null;
  /** The clock's reading when prepare started. */
  now: Date;
  transaction: RequestTransaction<P>;
}

export type AnyRoute = RouteDefinition<RouteSchemas> | NoTxRouteDefinition<RouteSchemas>;

export function defineRoute<const S extends RouteSchemas, const P extends string = never>(route: RouteDefinition<S, P>): AnyRoute;
export function defineRoute<const S extends RouteSchemas, const P extends string = never>(route: NoTxRouteDefinition<S, P>): AnyRoute;
export function defineRoute(route: AnyRoute): AnyRoute {
  return route;
}

export interface SubscriptionDefinition {
  /** Unique name; also the pg-boss queue name. */
  name: string;
  event: string;
  /** Runs in the event's tenant transaction; the event id is recorded there for idempotency. */
  handle(ctx: TxContext, event: DeliveredEvent, services: Services): Promise<void>;
  /** Retries before the event is dead-lettered (default 5). */
  retryLimit?: number;
  /** Seconds before the first retry, doubling after each (default 2). */
  retryDelay?: number;
  /** Events the handler publishes; each must be declared (boot check). */
  publishes?: readonly string[];
}

export interface DeliveredEvent {
  id: string;
  name: string;
  tenantId: string;
  actorId: string | null;
  occurredAt: string;
  payload: Record<string, unknown>;
}

export interface JobDefinition {
  name: string;
  cron: string;
  /**
   * Per tenant: each schedule slot fans out as one run per served tenant, each retried and
   * dead-lettered on its own. Otherwise the job runs once per slot, with no tenant.
   */
  perTenant: boolean;
  /** Events the job publishes; each must be declared (boot check). */
  publishes?: readonly string[];
  /** Retries of a failed run before it is dead-lettered (default 2). */
  retryLimit?: number;
  /** Seconds before the first retry, doubling after each (default 30). */
  retryDelay?: number;
  /**
   * Runs with no transaction open: it opens its own with ctx.transaction, as many as it needs
   * (a transaction, a provider call outside any, another transaction). A throw fails the run,
   * which is then retried. What it returns is logged and printed by `npm run job`.
   */
  run(ctx: JobContext): Promise<JobSummary | void>;
}

/** What a job run did, for the log and the operator's `npm run job` (plain JSON values). */
export type JobSummary = Record<string, unknown>;

export interface JobContext {
  services: Services;
  /** The tenant this run is for; null for a job that is not per tenant. */
  tenant: TenantRef | null;
  /** The clock's reading when this run started (see framework/clock.ts); `--at` sets it. */
  now: Date;
  /** The schedule slot this run belongs to (an ISO time): the same on every retry of the run. */
  slot: string;
  /**
   * Opens a transaction in the run's tenant, commits it when fn resolves (rolls back if it throws),
   * and returns fn's result. Only for per-tenant jobs; a job that is not per tenant names its tenant
   * through services.transactions.
   */
  transaction<T>(fn: (tx: TxContext) => Promise<T>): Promise<T>;
}

export type TenantCreationHook = (ctx: TxContext, services: Services) => Promise<void>;

export interface ModuleDefinition {
  name: string;
  description?: string;
  permissions?: readonly PermissionDeclaration[];
  events?: readonly string[];
  entities?: readonly AnyEntity[];
  /** Hand-written routes; a function when they depend on the configuration (e.g. single sign-on). */
  routes?: readonly AnyRoute[] | ((config: Config) => readonly AnyRoute[]);
  subscriptions?: readonly SubscriptionDefinition[];
  /** Jobs; a function when they depend on the configuration (e.g. on what the blob store can do). */
  jobs?: readonly JobDefinition[] | ((config: Config) => readonly JobDefinition[]);
  /** Runs inside the tenant-creation transaction, scoped to the new tenant. */
  onTenantCreated?: TenantCreationHook;
  /** Directory of SQL migrations; defaults to migrations/<name>. */
  migrations?: string;
  /** Roles every new tenant gets besides admin and member: name → permissions. */
  defaultRoles?: Readonly<Record<string, readonly string[]>>;
  /** A count the admin shell's header shows to a signed-in caller (e.g. unread notifications). */
  adminBadge?: AdminBadge;
  /** What the module adds to the admin shell: its own pages, sidebar entries (docs/module-authoring.md, "Admin pages"). */
  admin?: ModuleAdmin;
  /**
   * The tables of the framework's identity reads (framework/access/identity-tables.ts: users,
   * roles, sessions) that this module's migrations create. The framework reads them in every
   * transaction's opening statement; the boot check names the declaring module when one is off.
   */
  identityTables?: readonly IdentityTableName[];
}

/** What a module contributes to the admin shell besides its entities' generated pages. */
export interface ModuleAdmin {
  /** Hand-written pages: each function registers its routes with registerAdminPage(site, ...), once, at startup. */
  pages?: readonly AdminPagesRegistrar[];
  /** Sidebar entries; the sidebar lists every module's entries by `order`, and leaves out one whose path no page serves. */
  sidebar?: readonly SidebarEntry[];
  /**
   * false: the module's entities get no generated list/read/create/edit pages (their data is shown
   * by hand-written pages, or not in the shell at all). Default true.
   */
  resourcePages?: boolean;
}

/**
 * The admin header's badge: `count` runs in the page's own transaction (tx.db, never the pool),
 * for the signed-in caller (tx.session), on every admin page: keep it one indexed query.
 */
export interface AdminBadge {
  /** Says what is counted, e.g. "unread notifications" (the badge's accessible name). */
  label: string;
  /** Where the badge links to, if anywhere. */
  href?: string;
  count(tx: TxContext<never>): Promise<number>;
}

export function defineModule(module: ModuleDefinition): ModuleDefinition {
  return module;
}

/** The jobs a module declares under this configuration. */
export function moduleJobs(module: ModuleDefinition, config: Config): readonly JobDefinition[] {
  return typeof module.jobs === 'function' ? module.jobs(config) : (module.jobs ?? []);
}

/** Erases an entity's field types so it can sit in a module's list. */
export function entity<F extends TProperties, CN extends string, S extends boolean, C extends TProperties, PS extends TSchema>(
  definition: EntityDefinition<F, CN, S, C, PS>,
): AnyEntity {
  return definition as unknown as AnyEntity;
}
