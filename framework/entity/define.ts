import type { Static, TObject, TProperties, TSchema } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SessionInfo, TxContext } from '../context/tx.ts';
import type { Services } from '../services.ts';
import type { Config } from '../config/schema.ts';
import type { TenantRef } from '../context/tenant.ts';

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

/** A row as handlers, hooks and commands see it: the fields plus the system columns. */
export type EntityRow<F extends TProperties> = FieldValues<F> & {
  id: string;
  createdAt: Date;
  updatedAt: Date;
};

export interface CommandDefinition<F extends TProperties, B extends TSchema = TSchema> {
  summary: string;
  description?: string;
  /** Request body schema; omitted when the command takes none. */
  body?: B;
  /** Defaults to the entity's write permission. */
  permission?: string;
  /** Events this command may publish (checked at boot against the declared events). */
  publishes?: readonly string[];
  /**
   * Runs inside the request's transaction with the row locked. Returns the changes to store
   * (command-owned fields included), or nothing when the command changes nothing.
   */
  run(ctx: TxContext, row: EntityRow<F>, body: Static<B>, services: Services): Promise<Partial<FieldValues<F>> | void>;
}

export type WriteOperation = 'create' | 'update' | 'delete';

export interface EntityHooks<F extends TProperties> {
  /** Before an insert or update is written: may adjust the values (command-owned fields included). */
  beforeWrite?(ctx: TxContext, input: { op: 'create' | 'update'; values: Partial<FieldValues<F>>; previous?: EntityRow<F> }): Promise<Partial<FieldValues<F>> | void>;
  /** After any write, in the same transaction: follow-up writes and events. */
  afterWrite?(ctx: TxContext, input: { op: WriteOperation; row: EntityRow<F>; previous?: EntityRow<F> }): Promise<void>;
}

export interface EntityDefinition<F extends TProperties, CN extends string = string> {
  module: string;
  name: string;
  /** Defaults to name + "s"; names the path segment and the table. */
  plural?: string;
  table?: string;
  label?: string;
  description?: string;
  fields: F;
  /** Settable on create, refused on PATCH. */
  immutable?: readonly (keyof F & string)[];
  /** Fields only a command writes, each naming the command that owns it. */
  commandOwned?: { readonly [K in keyof F & string]?: NoInfer<CN> };
  permissions: { read: string; write: string };
  /** Event names override; by default <module>.<entity>.created / .updated / .deleted. */
  events?: { created?: string; updated?: string; deleted?: string };
  /** Extra events the hooks may publish. */
  hookPublishes?: readonly string[];
  hooks?: EntityHooks<F>;
  commands?: { readonly [K in CN]: CommandDefinition<F> };
  /** Fields a list may sort by; createdAt and updatedAt always may. */
  sortable?: readonly (keyof F & string)[];
  admin?: { title: keyof F & string; columns: readonly (keyof F & string)[] };
  /**
   * Rarely needed: values the conformance suite merges into the create body it derives from the
   * field schemas, for a field no schema can describe (a reference that must name an existing row).
   * Runs in the tenant's transaction; n varies between calls so unique keys stay unique.
   */
  sample?(ctx: TxContext, n: number): Promise<Partial<FieldValues<F>>>;
}

/**
 * Declares an entity. The generic parameters are inferred, so naming a field the entity does not
 * have in immutable, commandOwned, sortable or admin fails to compile, as does a command-owned
 * field naming an undeclared command.
 */
export function defineEntity<const F extends TProperties, const CN extends string = never>(
  definition: EntityDefinition<F, CN>,
): EntityDefinition<F, CN> {
  return definition;
}

/** Type-erased entity, as the framework stores it after declaration. */
export type AnyEntity = EntityDefinition<TProperties, string>;

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

export interface RouteDefinition<S extends RouteSchemas = RouteSchemas> {
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
  publishes?: readonly string[];
  /** Answers also on hosts with no tenant (only the probes). */
  global?: boolean;
  handler(ctx: RouteContext<S> & { tx: TxContext }): Promise<unknown>;
}

export interface NoTxRouteDefinition<S extends RouteSchemas = RouteSchemas> extends Omit<RouteDefinition<S>, 'handler' | 'transaction'> {
  transaction: 'none';
  /** session: resolved (and guarded) in a short transaction of its own when access is signedIn or a permission; else null. */
  handler(ctx: RouteContext<S> & { session: SessionInfo | null }): Promise<unknown>;
}

export type AnyRoute = RouteDefinition<RouteSchemas> | NoTxRouteDefinition<RouteSchemas>;

export function defineRoute<const S extends RouteSchemas>(route: RouteDefinition<S>): AnyRoute;
export function defineRoute<const S extends RouteSchemas>(route: NoTxRouteDefinition<S>): AnyRoute;
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

export interface TenantCreationHook {
  (ctx: TxContext, services: Services): Promise<void>;
}

export interface ModuleDefinition {
  name: string;
  description?: string;
  permissions?: readonly PermissionDeclaration[];
  events?: readonly string[];
  entities?: readonly AnyEntity[];
  /** Hand-written routes; a function when they depend on the configuration (e.g. single sign-on). */
  routes?: readonly AnyRoute[] | ((config: Config) => readonly AnyRoute[]);
  subscriptions?: readonly SubscriptionDefinition[];
  jobs?: readonly JobDefinition[];
  /** Runs inside the tenant-creation transaction, scoped to the new tenant. */
  onTenantCreated?: TenantCreationHook;
  /** Directory of SQL migrations; defaults to migrations/<name>. */
  migrations?: string;
  /** Roles every new tenant gets besides admin and member: name → permissions. */
  defaultRoles?: Readonly<Record<string, readonly string[]>>;
}

export function defineModule(module: ModuleDefinition): ModuleDefinition {
  return module;
}

/** Erases an entity's field types so it can sit in a module's list. */
export function entity<F extends TProperties, CN extends string>(definition: EntityDefinition<F, CN>): AnyEntity {
  return definition as unknown as AnyEntity;
}
