// The route author API: defineRoute, who may call a route (Access), the one-exchange and no-transaction forms. (define.ts gathers the author API.)
import type { Statement } from '../contracts/database.ts';
import type { Static, TSchema } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PendingEvent, SessionInfo, TxContext } from '../contracts/transaction.ts';
import type { Services } from '../contracts/services.ts';
import type { TenantRef } from '../contracts/tenant.ts';
import type { IncomingHttpHeaders } from 'node:http';

/** Who may call a route: anybody, anybody (with the session resolved if present), any session, or a permission. */
export type Access = 'public' | 'optional' | 'signedIn' | { permission: string };

export interface RouteSchemas {
  params?: TSchema;
  querystring?: TSchema;
  body?: TSchema;
  /** Request headers the route reads (lower-case names; other headers pass): validated and documented. */
  headers?: TSchema;
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
  /**
   * A declared feature (ModuleDefinition.features) the tenant's plan must grant: without it the
   * signed-in caller is refused 403 FEATURE_NOT_IN_PLAN before the handler runs (docs/billing.md).
   * Not for a public route.
   */
  feature?: string;
  /**
   * What the handler itself checks of the tenant's plan, for OpenAPI's 403: the declared limit its
   * write counts against (admitLimit, keepWithinLimit: PLAN_LIMIT_REACHED; an entity's writes get
   * their entity's `limit`), and a feature some of its values ask for (requireFeature: a public
   * upload, FEATURE_NOT_IN_PLAN). Both must be declared by a module (boot check).
   */
  entitlements?: { readonly limit?: string; readonly feature?: string };
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
   * 'only': a target that takes nothing but its form (the admin shell's posts): any other post,
   * JSON or no body at all, is refused with 415 before the guard, so none runs without the token.
   */
  form?: boolean | 'only';
  /**
   * The route only reads, and may read from the read replica (database.replica_url), which can be
   * up to database.replica_max_lag_ms behind the primary: 'always' (public content, feeds, exports,
   * summaries) or 'on-request' (only when the caller sends `Prefer: replica`, which the OpenAPI
   * document and the answer's `Preference-Applied: replica` then say; lists and reads by id).
   * Without a replica, or while it lags past the bound, the primary serves. Only for a GET route
   * that publishes nothing (a boot check): a replica refuses every write.
   */
  replica?: 'always' | 'on-request';
  /** Left out of the OpenAPI document: the admin shell's HTML pages, which are no API. */
  hidden?: boolean;
  /**
   * false: the route takes the session cookie only and ignores an `Authorization: Bearer` header
   * (a personal access token is no session): the admin shell's pages, and the routes that manage
   * credentials (tokens, the password). Default: a token authenticates the route as its user.
   */
  bearer?: false;
  /**
   * A create or command that honours the Idempotency-Key header (framework/http/idempotency.ts):
   * the header is declared and validated, and a request carrying it is served by the handler
   * (never oneExchange), whose transaction claims the key and records the answer beside the effect.
   * Only for a route whose access is a permission or signedIn. A no-transaction route (a prepared command)
   * makes its effect in ctx.effectTransaction; a retry is replayed before its handler runs.
   */
  idempotent?: boolean;
  /**
   * Where the secrets of an idempotent route's answer sit, when its response schema cannot say
   * (a batch, whose answer holds other routes' answers): the recorded answer has null there.
   * Default: the fields its response schema marks Secret().
   */
  idempotentSecrets?(answer: unknown, status: number): readonly (readonly string[])[];
  /**
   * The route's whole database work as one statement, so the request costs one exchange with
   * PostgreSQL: BEGIN, the opening statement, the framework's guard, this statement and COMMIT
   * leave in one write. It is built from the validated request before the caller is known: the
   * guard (context/opening.ts) makes the transaction read-only for a caller without the route's
   * permission, so whatever the statement does, such a caller commits nothing; a read may still
   * carry `permissionPredicate` in its WHERE to read nothing for them. The guard in the process then
   * decides from the opening statement's answer, as for the handler, before the statement's answer
   * is used. Only for a route whose access is a permission. Returning undefined (or throwing)
   * leaves the request to the handler.
   */
  oneExchange?(ctx: RouteContext<S>): OneExchange | undefined;
  /**
   * A list's rows in bulk: the route also answers `Accept: text/csv` or `?format=csv`, and
   * `application/x-ndjson` or `?format=ndjson`, with every row its filters match (not a page),
   * streamed in batches, each read in a short transaction of its own (framework/bulk/list-export/).
   */
  exports?: ListExport;
  /**
   * Work the request needs before its transaction opens, with no transaction open and no pool
   * connection held: CPU-bound work such as hashing a password, which would otherwise hold one of
   * the pool's connections all the while. It runs once the request has passed the route's checks
   * and validation and the caller has been resolved and guarded (in a short transaction of its own,
   * which also replays an Idempotency-Key's recorded answer first); what it returns reaches the
   * handler as `prepared`, and a problem it throws is the answer. Every path that runs the route
   * honours it the same way: the request sent alone, one request of a batch (every request of the
   * batch is prepared before the batch's one transaction opens) and an admin page that runs the
   * route (framework/admin/api-route.ts). The handler re-reads in its transaction whatever the
   * prepared result depends on: the row may have changed meanwhile.
   */
  beforeTransaction?(ctx: RouteContext<S> & { session: SessionInfo | null }): Promise<unknown>;
  /**
   * Whether this request has anything for beforeTransaction to do (default: every request has).
   * When it has not, the request is served in its one transaction with nothing prepared, and no
   * short transaction resolves its caller first (a batch none of whose requests has such a step).
   */
  prepares?(ctx: RouteContext<S>): boolean;
  /** prepared: what beforeTransaction returned (undefined when the route has none). */
  handler(ctx: RouteContext<S> & { tx: TxContext<P>; prepared?: unknown }): Promise<unknown>;
}

/** What a list declares to be exported (RouteDefinition.exports). */
export interface ListExport {
  /** The file name's stem: `tasks` sends tasks.csv. */
  name: string;
  /**
   * The request's query (validated by the route's schema) as a walk over every row it matches,
   * `params` the route's path parameters (a record's history: its id); 422 for what does not fit.
   */
  open(query: Record<string, unknown>, now: Date, params: Readonly<Record<string, string>>): ExportWalk;
}

/** One export's walk over the rows, batch by batch, by keyset. */
export interface ExportWalk {
  /** The fields each row holds, in order: a CSV's header (read once the first batch is in). */
  readonly columns: readonly string[];
  /**
   * Up to `size` rows after `after` (a `next` of this walk; none for the first batch), in the
   * list's order, as the list answers them, and where the next batch starts (null after the last).
   * The rows come as objects, or already written in `format` as one text (ExportBatch).
   */
  batch(tx: TxContext, after: string | undefined, size: number, format: ExportFormat): Promise<ExportBatch>;
}

/** What an export writes: CSV (RFC 4180) or NDJSON. */
export type ExportFormat = 'csv' | 'ndjson';

/**
 * One batch of an export: its rows, for the export to write, or its lines already written in the
 * format asked for (CSV records without the header, or NDJSON lines), as PostgreSQL writes them
 * for a generated list (framework/bulk/list-export/sql-lines.ts); and where the next batch starts.
 */
export type ExportBatch =
  | { rows: Record<string, unknown>[]; next: string | null }
  | { text: string; next: string | null };

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
  /**
   * Once the guard has passed, what else the answer needs of the caller (a query reading through
   * a reference needs its read permission): throws the refusal, and nothing of the rows is answered.
   */
  admit?(can: (permission: string) => boolean): void;
  /** The error a failure of the statement stands for (e.g. a malformed cursor is 422). */
  failed?(err: unknown): unknown;
}

export interface NoTxRouteDefinition<S extends RouteSchemas = RouteSchemas, P extends string = string>
  extends Omit<RouteDefinition<S, P>, 'handler' | 'transaction' | 'beforeTransaction' | 'prepares'> {
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
   * effectTransaction(fn): the transaction that carries the request's effect. For an idempotent
   * route called with an Idempotency-Key it claims the key and records the answer beside the
   * effect, or replays the answer of a request with the same key that committed meanwhile
   * (framework/http/idempotency.ts); otherwise it is transaction(fn).
   */
  handler(
    ctx: RouteContext<S> & {
      session: SessionInfo | null;
      transaction: RequestTransaction<P>;
      effectTransaction: RequestTransaction<P>;
    },
  ): Promise<unknown>;
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

export function defineRoute<const S extends RouteSchemas, const P extends string = never>(
  route: RouteDefinition<S, P>,
): AnyRoute;
export function defineRoute<const S extends RouteSchemas, const P extends string = never>(
  route: NoTxRouteDefinition<S, P>,
): AnyRoute;
export function defineRoute(route: AnyRoute): AnyRoute {
  return route;
}
