// The entity author API: defineEntity, its hooks, commands (defineCommand) and public read. (define.ts gathers the author API.)
import type { Static, TProperties, TSchema } from 'typebox';
import type { TxContext } from '../contracts/transaction.ts';
import type { Services } from '../contracts/services.ts';
import type { Config } from '../contracts/config.ts';
import type { ProblemCode } from '../contracts/problems.ts';
import type { EntityStorage } from './storage.ts';
import type { CommandPrepareContext } from './route-definition.ts';
import type { FieldValues, NoFields, EntityRow, CommandRow, FieldChanges, Answer, RowFilter } from './entity-values.ts';
import type { CommandText, FieldText } from './field-text.ts';

/** An entity's key, `module.entity` (`user.user`): what a reference names. */
export type EntityKey = `${string}.${string}`;

/** Who owns an entity's rows: each tenant its own (the default), or one set every tenant reads. */
export type EntityScope = 'tenant' | 'global';

/** What a list's query may name besides the declared fields: the id and the two timestamps. */
export type QueryableName<F extends TProperties> = (keyof F & string) | 'id' | 'createdAt' | 'updatedAt';

export type { DeleteMode } from './storage.ts';

/** Routes a singleton may declare besides GET and its commands: PUT, PATCH and DELETE. */
export type SingletonRoute = 'replace' | 'update' | 'delete';

/**
 * A command: `POST .../{id}/<command>`. B is its body schema, P the events it publishes, R what its
 * step before the transaction (`beforeTransaction`) hands `run`; declared through defineCommand,
 * `run` sees the body as its schema's type, `prepared` as the step's result, and its ctx.publish
 * accepts only the events listed in `publishes`.
 */
export interface CommandDefinition<
  F extends TProperties,
  B extends TSchema = TSchema,
  P extends string = string,
  S extends boolean = false,
  R = unknown,
> {
  summary: string;
  description?: string;
  /** Request body schema; omitted when the command takes none. */
  body?: B;
  /** Defaults to the entity's write permission. */
  permission?: string;
  /** A declared feature the tenant's plan must grant for this command (besides the entity's own `feature`). */
  feature?: string;
  /**
   * false: the command's route takes the session cookie only and ignores an `Authorization: Bearer`
   * header (RouteDefinition.bearer): a command that changes credentials or roles
   * (framework/access/credentials.ts), which a personal access token never may.
   */
  bearer?: false;
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
  run(
    ctx: TxContext<P>,
    row: CommandRow<F, S>,
    body: Static<B>,
    services: Services,
    prepared: R,
  ): Promise<FieldChanges<F> | void>;
  /**
   * CPU-bound work to do before the command's transaction opens, with no transaction open and no
   * pool connection held (hashing a password: ~100 ms that would otherwise hold a connection). It
   * gets the validated body and the app's services, opens no transaction and makes no effect; it
   * runs once the caller has been guarded for the command (a caller who may not run it prepares
   * nothing), and what it returns reaches `run` as `prepared`. A problem it throws is the answer,
   * and the command's transaction never opens. The command's route, its admin form and
   * POST /api/v1/batch (every request of a batch prepared before the batch's transaction opens)
   * run it alike. `run` must re-check in its transaction what the result depends on: the row was
   * read after the step (its `states` are checked then), and may have changed meanwhile. The
   * result is never recorded: keep secrets (a password's hash) out of the answer and the events.
   */
  beforeTransaction?(body: Static<B>, services: Services): Promise<R>;
  /**
   * Work that must happen before the command's transaction with no transaction open, such as a
   * payment: it opens transactions of its own (ctx.transaction) and may call out between them.
   * What it returns reaches `run` as `prepared`; a problem it throws is the answer, and `run` does
   * not run. A command with `prepare` is served as a `transaction: 'none'` route whose command
   * transaction opens after prepare returns; having effects of its own, it cannot be one request of
   * a batch (422 BATCH_REQUEST_UNSUPPORTED) and has no generated admin form. Work without effects
   * that only must not hold a connection belongs in `beforeTransaction`, which every path runs.
   */
  prepare?(ctx: CommandPrepareContext<P>, body: Static<B>): Promise<R>;
  /**
   * The states of the entity's state field (EntityDefinition.states) this command accepts: `from`,
   * where it acts, and `unchanged`, where it is accepted and changes nothing (no write, no event,
   * the row answered as it is). Any other state is refused before `run` with the entity's refusal
   * code (409), and the admin shell offers the command only on a row in a `from` state.
   * Omitted: every state is accepted and the command is always offered.
   */
  states?: CommandStates;
  /** Body fields that name a row of another entity (`assigneeId: 'user.user'`): the shell offers a picker. */
  references?: Readonly<Record<string, string>>;
  /**
   * Body fields naming a person who must be able to act once the command has run, with the
   * permission they need (`assigneeId: 'task:read'`: an assignee must be able to open the task).
   * The person must be an active user of the tenant whose roles grant it (or `*`): anyone else is
   * 422 VALIDATION_FAILED before `run`, with the reason (framework/access/actors.ts), and the
   * shell's picker for the field offers only such people. Each field is also a reference to the
   * users entity (`references`).
   */
  actors?: Readonly<Record<string, string>>;
  /** How the admin shell offers the command to people: its button, opening sentence and body fields' labels (field-text.ts). */
  admin?: CommandText;
}

/** Where a command acts and where it is a no-op; see CommandDefinition.states. */
export interface CommandStates {
  from: readonly string[];
  unchanged?: readonly string[];
  /** Said after the refusal's first sentence, e.g. 'Unpublish it first.' */
  hint?: string;
  /**
   * The state the command leaves the row in when it acts (resolve: 'resolved'). Where a PATCH
   * cannot reach that state (EntityStates.patchMoves), the shell's edit form names this command
   * beside the state field: "To move it to resolved, use the “Resolve” button".
   */
  to?: string;
}

/** An array field's choices, declared (EntityAdmin.choices). */
export interface DeclaredChoices {
  /** 'events': the events the modules declare (their own and their entities' lifecycle events). */
  from: 'events';
  /** A value standing for every choice, offered first (a webhook endpoint's '*'), with what people read for it. */
  all?: { value: string; label: string };
}

/**
 * An entity's state field: what commands' `states` are read against, the values a create may
 * take, and the code a refusal answers.
 */
export interface EntityStates<F extends TProperties> {
  field: keyof F & string;
  /** The values a create may store (the shell's new form offers only these); default: any. */
  initial?: readonly string[];
  /** A declared 409 (the framework's INVALID_STATE or INVALID_TRANSITION, or a module's own): a command in a state it does not accept, a create outside `initial`. */
  refusal: ProblemCode;
  /**
   * The states a PATCH may move a row to from where it stands (the one it holds aside): the
   * entity's status graph as its update accepts it. The framework refuses every other move of a
   * PATCH or PUT (409 with `refusal`, naming the moves there are and the command that reaches the
   * asked state); the shell's edit form offers only these, and names the
   * commands (CommandStates.to) that reach the others. Omitted: a PATCH may set any value the
   * field's schema allows.
   */
  patchMoves?(row: EntityRow<F>): readonly string[];
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
export function defineCommand<F extends TProperties, S extends boolean = false>(
  _fields: F,
  _options?: { singleton: S },
) {
  return <const B extends TSchema = TSchema, const P extends string = never, R = unknown>(
    command: CommandDefinition<F, B, P, S, R>,
  ): CommandDefinition<F, NoInfer<B>, NoInfer<P>, S, R> => command;
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
  /**
   * Before an insert or update from a request body is written: may adjust the values (command-owned
   * fields included), or refuse them. `config` is the installation's configuration, for rules that
   * follow it (a webhook URL the settings would never deliver to). `revives` is true when the update
   * is a restore bringing a deleted row back: a rule bounding the live rows counts it as a create.
   */
  beforeWrite?(
    ctx: TxContext,
    input: {
      op: 'create' | 'update';
      values: Partial<FieldValues<F>>;
      previous?: EntityRow<F>;
      revives?: boolean;
      config: Config;
    },
  ): Promise<Partial<FieldValues<F>> | void>;
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
  /**
   * The same read as an HTML page for browsers, at `<path>/:<by>` on the tenant's host (e.g.
   * '/p' serves /p/about-us): the public shape rendered into `template` (a name under templates/,
   * which templates.dir may replace) as `it.page`, with the JSON read's ETag, 304 and
   * Cache-Control; anything the JSON read answers 404 or 422 is a plain 404 page. Hidden from OpenAPI.
   */
  page?: { path: string; template: string };
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
  /** Per field: the code (a declared 422, e.g. the module's own) a value outside the field's schema answers instead of VALIDATION_FAILED. */
  invalidCodes?: { readonly [K in keyof F & string]?: ProblemCode };
  /** Per unique field: the unique index that keeps it unique, and the code (a 409) a duplicate answers instead of ALREADY_EXISTS. */
  uniqueCodes?: { readonly [K in keyof F & string]?: { index: string; code: ProblemCode } };
  /** Fields the created, updated and deleted events carry besides the id (e.g. a slug); never a body or an address. */
  eventFields?: readonly (keyof F & string)[];
  /** Response-only fields afterRead adds (no column, never written): part of the row schema. */
  computed?: C;
  permissions: { read: string; write: string };
  /**
   * A declared feature (ModuleDefinition.features) gating the whole entity: every route of it but
   * a public read answers 403 FEATURE_NOT_IN_PLAN at a tenant whose plan lacks it (docs/billing.md).
   */
  feature?: string;
  /**
   * A declared limit (ModuleDefinition.limits) each created row counts one unit of: the create
   * (a route's, a batch's or an import's) is refused 403 PLAN_LIMIT_REACHED when the tenant's use
   * has reached the limit's value, checked under the limit's lock in the create's transaction.
   * Every other write of the entity (PATCH, PUT, restore, command), which may make a row count
   * again, is refused when the limit's declared use grew past the value (PlanLimits.keepWithin).
   */
  limit?: string;
  /** Event names override; by default <module>.<entity>.created / .updated / .deleted. */
  events?: { created?: string; updated?: string; deleted?: string };
  /** Extra events the hooks may publish. */
  hookPublishes?: readonly string[];
  hooks?: EntityHooks<F, NoInfer<CN>, NoInfer<C>>;
  commands?: { readonly [K in CN]: CommandDefinition<F, TSchema, string, S> };
  /** A public read route by a unique field (e.g. content pages by slug). */
  publicRead?: PublicReadDefinition<F, PS>;
  /**
   * Problem answers particular to the create, for OpenAPI: status → description naming the code
   * (a limit its beforeWrite enforces, say). Commands declare theirs on the command.
   */
  createProblems?: Readonly<Record<number, string>>;
  /** Fields a list may sort by; createdAt and updatedAt always may. */
  sortable?: readonly (keyof F & string)[];
  /**
   * Indexes beyond the one per sort, each a list of fields in key order: `[['status', 'deadline']]`
   * for the list filtered by status and sorted or ranged by deadline. Each becomes an index led by
   * tenant_id (and the row-access fields), ended by id, over live rows where deletes are soft;
   * `npm run migration:new` writes it and the boot check requires it (docs/module-authoring.md).
   * createdAt and updatedAt may be named too.
   */
  indexes?: readonly (readonly ((keyof F & string) | 'createdAt' | 'updatedAt')[])[];
  /**
   * The fields a list may filter by (and so sort by), when not all of them: every field, id,
   * createdAt and updatedAt are filterable by default (framework/query/, docs/api-conventions.md
   * "Filters"). A secret field (Secret()) never is.
   */
  filterable?: readonly QueryableName<F>[];
  /**
   * The name a reference (admin.references) goes by in queries (`?assignee.displayName=`,
   * `expand=assignee`), where the field's own name without its `Id` suffix will not do; a reference
   * field whose name has no such suffix and that declares none is filtered by its id only.
   */
  referenceNames?: { readonly [K in keyof F & string]?: string };
  /** Fields a list's `q` parameter searches (case-insensitive substring); default the admin title field when it is a string. */
  searchable?: readonly (keyof F & string)[];
  /** The state field commands declare their `states` against (CommandDefinition.states). */
  states?: EntityStates<F>;
  /**
   * History (docs/history.md): kept by default. The framework records a revision of every create,
   * PATCH, delete, command and restore in the write's own transaction (who, when, each changed
   * field's old and new value), served at `.../{id}/history` and restorable at `.../{id}/restore`.
   * `exclude`: fields never recorded (a secret field, marked Secret(), never is). false: no history.
   */
  history?: false | { readonly exclude?: readonly (keyof F & string)[] };
  /**
   * The storage part: the table's name, how a delete is kept, and what the table holds besides the
   * fields (unique fields, extra columns); framework/entity/storage.ts. The foreign keys derive
   * from the admin part's references.
   */
  storage?: EntityStorage<F>;
  /** The admin part: what the admin shell shows of the entity and says about its fields. */
  admin?: EntityAdmin<F, NoInfer<C>>;
}

/**
 * An entity's admin part: how the admin shell titles a row and names rows, which columns a list
 * shows, where a field's choices come from, which secrets it shows once, and what a person reads
 * about each field. The API takes none of it but the references, which a list's query filters
 * through and expands (`referenceNames` names them there).
 */
export interface EntityAdmin<F extends TProperties, C extends TProperties = NoFields> {
  /** The field a row is titled by (links, pickers, headings, the list's q by default); default the first field. */
  title?: keyof F & string;
  /** The list's columns; default the first five fields. */
  columns?: readonly (keyof F & string)[];
  /**
   * What people call one row, where the entity's `label` (also the API's, in OpenAPI) reads badly
   * to them: content's is 'Page or post' ("New page or post", "1 page or post"). Default `label`.
   */
  label?: string;
  /**
   * What people call several, where adding an s to the label does not say it: 'Pages and posts',
   * never the API's path segment ("Contents"). Default the label with an s.
   */
  labelPlural?: string;
  /**
   * Fields that name a row of another entity, by its key (`assigneeId: 'user.user'`, module.entity):
   * the one place a relation is named (framework/entity/references.ts). The table gets the foreign
   * key, composite `(tenant_id, assignee_id) → users (tenant_id, id)` between tenant-owned entities,
   * so the database refuses a row of another tenant (422 at the field); the API keeps the ids (a
   * query filters through them and expands them: `expand=assignee`); the admin shell shows the
   * referenced row's title, linked to it, and picks it from a list. The type asks for
   * module.entity; a key no registered entity has fails the boot check.
   */
  references?: { readonly [K in keyof F & string]?: EntityKey };
  /**
   * Array fields whose items are names the service declares (DeclaredChoices), offered as
   * checkboxes grouped by module where the field's own schema lists no values (an enum of its
   * items, which it prefers). What the API accepts stays the field's schema and hooks.
   */
  choices?: { readonly [K in keyof F & string]?: DeclaredChoices };
  /**
   * Computed fields that carry a secret in the one answer that makes it (the create's, or a
   * command's such as rotate-secret) and null in every other: a webhook endpoint's signingSecret.
   * The shell shows such a value once, on the page answering the form that made it, and
   * nowhere else: never in a detail page, a URL, a cookie or a log.
   */
  shownOnce?: readonly (keyof C & string)[];
  /**
   * What a person reads about each field: its label and hint, and the sentences a refused value
   * shows where the schema's rule alone says it badly (field-text.ts). The API's `description`
   * stays for developers.
   */
  fieldText?: { readonly [K in (keyof F | keyof C) & string]?: FieldText };
  /**
   * Which rows are overdue, so lists highlight them: `field` holds an instant, and a row is overdue
   * once it has passed (at the page's transaction time) while the row's state (EntityStates.field)
   * is none of `except`. A task: its deadline, except when resolved or closed.
   */
  overdue?: { field: keyof F & string; except?: readonly string[] };
  /**
   * The list page's filter controls (framework/admin/list-filters.ts; docs/admin.md, "Filters"):
   * `fields`, the fields offered a control, in order (default: the list's columns the query
   * language filters by: an enum, a boolean, a date-time or a reference each get one); `presets`,
   * ready-made filters shown as links above the form, each a label for people and the list's
   * parameters in the API's syntax (`{ deadline: 'lt.now', status: 'not.in.(resolved,closed)' }`,
   * optionally a `sort`), checked against the list's query at boot.
   */
  filters?: {
    fields?: readonly QueryableName<F>[];
    presets?: readonly { label: string; query: Readonly<Record<string, string>> }[];
  };
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

/** Erases an entity's field types so it can sit in a module's list. */
export function entity<
  F extends TProperties,
  CN extends string,
  S extends boolean,
  C extends TProperties,
  PS extends TSchema,
>(definition: EntityDefinition<F, CN, S, C, PS>): AnyEntity {
  return definition as unknown as AnyEntity;
}
