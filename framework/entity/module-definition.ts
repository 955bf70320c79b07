// The module author API: defineModule, permissions, subscriptions, jobs, and what a module adds to the admin shell. (define.ts gathers the author API.)
import type { TxContext } from '../contracts/transaction.ts';
import type { PermissionDeclaration, Services } from '../contracts/services.ts';
import type { Config } from '../contracts/config.ts';
import type { TenantRef } from '../contracts/tenant.ts';
import type { AdminPagesRegistrar, SidebarEntry } from '../contracts/admin.ts';
import type { BearerAttemptLimit } from '../contracts/access.ts';
import type { AnyRoute } from './route-definition.ts';
import type { AnyEntity } from './entity-definition.ts';
import type { Database } from '../contracts/database.ts';
import type { ProblemDeclaration } from '../contracts/problems.ts';
import type { TSchema } from 'typebox';
import type { DeclaredListQuery } from '../contracts/list-query.ts';
import type { FeatureDeclaration, LimitDeclaration } from '../contracts/entitlements.ts';

export type { PermissionDeclaration } from '../contracts/services.ts';
export type { FeatureDeclaration, LimitDeclaration } from '../contracts/entitlements.ts';

export interface SubscriptionDefinition {
  /** Unique name; also the pg-boss queue name. */
  name: string;
  /** A declared event, or '*' for every event (e.g. outgoing webhooks). */
  event: string;
  /**
   * Runs in the event's tenant transaction; the event id is recorded there for idempotency.
   * `jobs` queues jobs of the modules' queues in that same transaction (the worker always passes
   * it; a test calling a handler directly may leave it out when the handler queues nothing).
   */
  handle(ctx: TxContext, event: DeliveredEvent, services: Services, jobs?: SubscriptionJobs): Promise<void>;
  /** Retries before the event is dead-lettered (default 5). */
  retryLimit?: number;
  /** Seconds before the first retry, doubling after each (default 2). */
  retryDelay?: number;
  /** Events the handler publishes; each must be declared (boot check). */
  publishes?: readonly string[];
  /**
   * The tenants whose events concern the subscription: those having a live (not soft-deleted) row
   * in this table, a tenant-owned entity table of the declaring module (boot check) that the
   * module's migration opens to cross-tenant reads (`call allow_cross_tenant_read(...)`). The relay
   * asks once per batch, in its claiming transaction, and queues no job for the events of any other
   * tenant. Left out: every tenant's events.
   */
  onlyTenantsWith?: { table: keyof Database & string };
}

/**
 * What a subscription may queue: jobs of a module's queue, inserted before the delivery commits,
 * with ids derived from the event (and the group), so a retried delivery queues nothing twice.
 */
export interface SubscriptionJobs {
  /**
   * group: jobs sharing it run at most the queue's groupConcurrency at once (e.g. one group per
   * receiving endpoint). Every job also counts for the event's tenant (the queue's tenantConcurrency).
   */
  send(queue: string, data: Record<string, unknown>, options?: { group?: string }): Promise<void>;
}

/**
 * A module's own pg-boss queue, worked in the worker role: each job is retried with a doubling
 * delay and jitter (pg-boss's retryBackoff) up to its retryLimit, then dead-lettered like an event
 * delivery. Jobs are added by a subscription (SubscriptionJobs.send). The worker shares its slots
 * fairly between tenants (framework/events/fair-queue.ts): a free slot goes first to a tenant with
 * no job running, and no tenant holds more than tenantConcurrency, so one tenant's burst never
 * makes another tenant's job wait behind all of it.
 */
export interface QueueDefinition {
  /** Unique name; the pg-boss queue is `queue-<name>`. */
  name: string;
  /** Seconds before the first retry (a whole number, pg-boss's unit), the cap on the delay, and the retries before the dead letter; may follow the configuration. */
  retry(config: Config): { retryDelay: number; retryDelayMax: number; retryLimit: number };
  /** Jobs of one group at once in one worker process (pg-boss localGroupConcurrency): N worker processes run at most N times as many. */
  groupConcurrency: number;
  /** Jobs at once in one worker process. */
  concurrency: number;
  /** Jobs of one tenant at once in one worker process: below concurrency, so other tenants always find a slot. */
  tenantConcurrency: number;
  /** Runs one job with no transaction open; a throw fails the attempt. attempt.last: no retry follows a failure. */
  work(data: Record<string, unknown>, services: Services, attempt: { number: number; last: boolean }): Promise<void>;
}

export interface DeliveredEvent {
  id: string;
  name: string;
  tenantId: string;
  actorId: string | null;
  occurredAt: string;
  payload: Record<string, unknown>;
  /** The X-Request-Id of the request that caused the event (null for a job's or a tool's). */
  requestId?: string | null;
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
  /** The features a plan may grant, which this module's routes, commands or entities are gated by (docs/billing.md). */
  features?: readonly FeatureDeclaration[];
  /** The limits a plan may set on what this module keeps (docs/billing.md). */
  limits?: readonly LimitDeclaration[];
  /**
   * The plan a tenant's subscription serves now, for its entitlements (docs/billing.md): the SQL of
   * one json value `{"features": [...], "limits": {...}}`, or null, for the tenant given as the SQL
   * expression `tenant`. The framework reads it in the statement that opens every transaction,
   * under row-level security; the module that keeps plans and subscriptions declares it (billing),
   * so the framework names none of its tables. At most one module declares it.
   */
  planEntitlementsSql?: (tenant: string) => string;
  /**
   * Where this module's own data names features and limits (billing: each live plan), as the SQL
   * of rows `holder` (how a person finds the row: "plan team-monthly"), `features` (text[]) and
   * `limits` (jsonb, its keys the names). Read once at boot and checked against the declarations
   * (framework/entitlements/stored-check.ts): a plan seeded straight into the database, or written
   * before a module stopped declaring a name, would otherwise grant or bound nothing, silently.
   */
  storedEntitlementsSql?: string;
  /**
   * Events besides those the module's `publishes` lists name under its name (which are its events
   * already: module-events.ts), e.g. one only a subscription listens for. Each event is written once.
   */
  events?: readonly string[];
  /**
   * Payload schemas of the module's events, by event (each such event is the module's): a publish
   * is checked against its schema (a mismatch is a programming error, 500 INTERNAL, logged), and
   * the schema is shown in the catalog and given to webhook consumers as JSON Schema.
   */
  eventPayloads?: Readonly<Record<string, TSchema>>;
  /**
   * Events the operator publishes in the operator's tenant about a customer tenant (a suspension,
   * a host added): event → the payload field holding that tenant's id. The relay also records each
   * in that tenant's activity (GET /api/v1/audit/activity), as done by the operator, naming none
   * of the operator's users. Each must be one of the module's events (boot check).
   */
  operatorEventsAbout?: Readonly<Record<string, string>>;
  entities?: readonly AnyEntity[];
  /** Hand-written routes; a function when they depend on the configuration (e.g. single sign-on). */
  routes?: readonly AnyRoute[] | ((config: Config) => readonly AnyRoute[]);
  subscriptions?: readonly SubscriptionDefinition[];
  /** Queues of the module's own jobs (QueueDefinition), worked in the worker role. */
  queues?: readonly QueueDefinition[];
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
  /**
   * How the admin shell's header names the signed-in person: the module that manages people
   * knows their name and address (the framework's users core holds neither). At most one module
   * provides it; without one, the header names the tenant alone.
   */
  adminPerson?: AdminPerson;
  /** What the module adds to the admin shell: its own pages, sidebar entries (docs/module-authoring.md, "Admin pages"). */
  admin?: ModuleAdmin;
  /**
   * The problem codes the module raises, each with its status, title and the sentence a person
   * reads in the admin shell (defineProblems). Declared here, never in the framework: the boot
   * check refuses a code two modules (or a module and the framework) declare, and a route or
   * command documenting a code nobody declares.
   */
  problems?: Readonly<Record<string, ProblemDeclaration>>;
  /**
   * Counts failed `Authorization: Bearer` attempts and refuses a client address past its limit
   * (framework/access/bearer.ts). At most one module provides it; without one, no limit applies.
   */
  bearerAttempts?: BearerAttemptLimit;
  /**
   * Hand-written lists of the module that can be followed live, each at `<path>/stream` (a
   * generated list gets its stream from the framework): docs/api-conventions.md, "Live changes".
   */
  streams?: readonly LiveListDefinition[];
}

/**
 * A hand-written list that clients may follow as server-sent events (framework/live): which table
 * its rows live in, how a row is answered, and which events change them. The framework serves
 * `GET <path>/stream` from it, authorised like the list.
 */
export interface LiveListDefinition {
  /** The list's path (`/api/v1/notification/notifications`); the stream is served at `<path>/stream`. */
  path: string;
  /** `<module>-<entity>-stream`. */
  operationId: string;
  /** What the list holds, in words for people and OpenAPI: `your notifications`. */
  label: string;
  tags?: readonly string[];
  /** Who may follow it: as the list's own route (signed in, or a permission). */
  access: 'signedIn' | { permission: string };
  /** The feature the tenant's plan must grant to follow it, as the list's own route declares. */
  feature?: string;
  /** The item as the list answers it: each event's row is serialized by this schema. */
  item: TSchema;
  /** The table the list's rows live in (tenant-owned: row-level security scopes every read). */
  table: keyof Database & string;
  /** Each field of the item and the column it is read from. */
  columns: Readonly<Record<string, string>>;
  /** Owner-only rows: the column holding the id of the one user who sees the row (the caller). */
  owner?: string;
  /** The events that change the list's rows, each with what it is to a stream; the payload's `id` names the row. */
  events: Readonly<Record<string, 'created' | 'updated' | 'deleted'>>;
  /**
   * The list's own query (its QueryList): the stream then takes the list's filters, or and fields.
   * Its columns must name the table's columns as they stand in `from <table>` (unqualified).
   */
  query?: DeclaredListQuery;
}

/** What a module contributes to the admin shell besides its entities' generated pages. */
export interface ModuleAdmin {
  /** What people call the module's part of the service, as the shell heads it (its events, say); default its name in words. */
  label?: string;
  /**
   * What people read for the module's own events where the name's words say it badly (the shell
   * names an event by its words otherwise: task.resolved is "Resolved" under the module's heading):
   * 'task.sla_breached' → "Missed its due date", never "Sla breached".
   */
  eventLabels?: Readonly<Record<string, string>>;
  /** Hand-written pages: each function registers its routes with registerAdminPage(site, ...), once, at startup. */
  pages?: readonly AdminPagesRegistrar[];
  /** Sidebar entries; the sidebar lists every module's entries by `order`, and leaves out one whose path no page serves. */
  sidebar?: readonly SidebarEntry[];
  /**
   * false: the module's entities get no generated list/read/create/edit pages (their data is shown
   * by hand-written pages, or not in the shell at all). Default true.
   */
  resourcePages?: boolean;
  /**
   * The page where a tenant chooses its plan (the billing module's subscription page): a sidebar
   * entry whose feature the plan lacks is shown locked, with a link there (docs/admin.md).
   */
  plansPage?: string;
}

/**
 * The signed-in person as the header names them: `find` runs in the page's own transaction (tx.db,
 * never the pool) for tx.session.userId, on every signed-in admin page: keep it one indexed query.
 * Null when the person is not found (the header then names no one).
 */
export interface AdminPerson {
  find(tx: TxContext<never>, userId: string): Promise<{ name: string; email: string } | null>;
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
  /**
   * The module's live list whose changes count the badge again, without a reload, on every page
   * of the shell (one of its `streams`, checked at boot; docs/admin.md, "Live changes").
   */
  follows?: LiveListDefinition;
  count(tx: TxContext<never>): Promise<number>;
}

export function defineModule(module: ModuleDefinition): ModuleDefinition {
  return module;
}

/**
 * Declares a module's problem codes, with their literal names kept for the type: the module adds
 * them to the codes `problem()` accepts by declaration merging, beside the table, and lists the
 * table in its definition (`problems`):
 *   export const billingProblems = defineProblems({ PLAN_IN_USE: { status: 409, title: '...', sentence: '...' } });
 *   declare module '../../framework/contracts/problems.ts' {
 *     interface ProblemCodes extends ProblemCodesOf<typeof billingProblems> {}
 *   }
 */
export function defineProblems<const T extends Readonly<Record<string, ProblemDeclaration>>>(problems: T): T {
  return problems;
}

/** The jobs a module declares under this configuration. */
export function moduleJobs(module: ModuleDefinition, config: Config): readonly JobDefinition[] {
  return typeof module.jobs === 'function' ? module.jobs(config) : (module.jobs ?? []);
}
