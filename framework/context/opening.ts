import { prepared } from '../db/statements.ts';
import type { SessionInfo } from '../contracts/transaction.ts';
import {
  EVERYTHING,
  entitlementSourceSql,
  resolveEntitlements,
  type EntitlementDefaults,
  type EntitlementSource,
} from '../entitlements/resolve.ts';

/**
 * The statements that open a tenant transaction and resolve its caller, shared by the two ways a
 * transaction runs (TenantTransactions.run and the one-exchange path, one-exchange.ts).
 */

export const APP_ROLE = 'tenantry_app';
/** The transaction-local setting the opening statement leaves the caller's permissions in. */
export const PERMISSIONS_SETTING = 'app.permissions';
/** And the signed-in user's id (empty without a session): the actor of events a one-exchange write publishes. */
export const ACTOR_SETTING = 'app.actor_id';

/**
 * A SQL condition true when the transaction's caller holds the permission (or the wildcard), read
 * from what the opening statement set: a statement sent in the same write as the opening one
 * finds no row for a caller without it, and does no work for one. The permission is a declared
 * name, fixed at boot, never a request's value.
 */
export function permissionPredicate(permission: string): string {
  const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;
  return `string_to_array(current_setting('${PERMISSIONS_SETTING}', true), ',') && array[${literal(permission)}, '*']`;
}

export interface EnterRow {
  session: {
    id: string;
    user_id: string;
    last_seen_at: string;
    permissions: string[];
    token?: boolean;
    name?: string;
  } | null;
  /** The tenant's entitlements as stored (framework/entitlements/resolve.ts), with a caller only. */
  entitlements?: EntitlementSource | null;
}

// The module tables read here (sessions, users, roles) are declared, column by column, in
// access/identity-tables.ts and checked against the database at boot.
// One round trip opens the tenant scope and resolves the caller: tenant first, then the
// restricted role, then the caller's permissions, which it also leaves in `app.permissions` for
// this transaction (comma-separated, empty without a session) so that a statement sent in the same
// write can refuse an unauthorised caller itself (see `permissionPredicate`), and the user's id in
// `app.actor_id` (the actor of the events such a write publishes). The columns are
// evaluated left to right and the session subquery only when its column is, after the role switch.
// Permissions are not de-duplicated here (a sort per request): the Set does it. The session
// subquery filters by tenant explicitly, so it is correct whether the planner evaluates it before
// or after the role switch. The tenant parameter is typed uuid (`$1::uuid::text`): as text, the
// generic plan compared every row a small table's sequential scan reads with `$1::uuid`, parsing
// the uuid again per row (users: 0.09 ms of the statement's 0.15 ms at a hundred users).
// The tenant's entitlements (features and limits, framework/entitlements/) travel with the
// permissions in the same statement, read every request: a change of plan, subscription or override
// applies at the next request. After the session column (role switched, tenant set), so the
// subscription is read under row-level security.
// The plan's part comes from the module that keeps plans (ModuleDefinition.planEntitlementsSql),
// decided at boot: the statements are made per installation by openingStatements.
type PlanSql = ((tenant: string) => string) | undefined;
const entitlementsColumn = (plan: PlanSql) => `${entitlementSourceSql('$1', plan)} as entitlements`;

const enterWithSessionText = (plan: PlanSql) => `
select set_config('app.tenant_id', $1::uuid::text, true) as t,
       set_config('role', '${APP_ROLE}', true) as r,
       set_config('${PERMISSIONS_SETTING}', '', true) as p,
       set_config('${ACTOR_SETTING}', '', true) as a,
       (select json_build_object(
                 'id', s.id, 'user_id', s.user_id, 'last_seen_at', s.last_seen_at,
                 'permissions', g.permissions,
                 'granted', set_config('${PERMISSIONS_SETTING}', array_to_string(g.permissions, ','), true),
                 'actor', set_config('${ACTOR_SETTING}', s.user_id::text, true))
          from sessions s
          join users u on u.tenant_id = s.tenant_id and u.id = s.user_id
          cross join lateral (select coalesce(array_agg(p), '{}') as permissions
                                from roles r cross join lateral unnest(r.permissions) p
                               where r.tenant_id = s.tenant_id and r.name = any (u.roles)) g
         where s.tenant_id = $1 and s.id_hash = $2 and s.expires_at > $3
           and u.status = 'active' and u.deleted_at is null) as session,
       ${entitlementsColumn(plan)}`;
/** The session's opening statement of an installation whose modules keep no plans. */
export const ENTER_WITH_SESSION = prepared(enterWithSessionText(undefined));

// The same for a personal access token (Authorization: Bearer, access/bearer.ts): the caller is the
// token's user, on the token's tenant only (the lookup is by tenant and hash), while the token
// lives and the user is active. Its permissions are the token's intersected with what the user's
// roles grant now, so a role change applies at the next request: a permission the token names
// counts when the roles hold it or the wildcard; the token's wildcard stands for the roles' whole
// list. last_seen_at is when the token was last used (the epoch when never), for its touch.
const enterWithTokenText = (plan: PlanSql) => `
select set_config('app.tenant_id', $1::uuid::text, true) as t,
       set_config('role', '${APP_ROLE}', true) as r,
       set_config('${PERMISSIONS_SETTING}', '', true) as p,
       set_config('${ACTOR_SETTING}', '', true) as a,
       (select json_build_object(
                 'id', k.id, 'user_id', k.user_id, 'last_seen_at', coalesce(k.last_used_at, 'epoch'::timestamptz), 'token', true, 'name', k.name,
                 'permissions', e.permissions,
                 'granted', set_config('${PERMISSIONS_SETTING}', array_to_string(e.permissions, ','), true),
                 'actor', set_config('${ACTOR_SETTING}', k.user_id::text, true))
          from access_tokens k
          join users u on u.tenant_id = k.tenant_id and u.id = k.user_id
          cross join lateral (select coalesce(array_agg(p), '{}') as permissions
                                from roles r cross join lateral unnest(r.permissions) p
                               where r.tenant_id = k.tenant_id and r.name = any (u.roles)) g
          cross join lateral (select array(select p from unnest(k.permissions) p where p = any (g.permissions) or '*' = any (g.permissions)
                                           union
                                           select p from unnest(g.permissions) p where '*' = any (k.permissions)) as permissions) e
         where k.tenant_id = $1 and k.token_hash = $2 and k.expires_at > $3
           and u.status = 'active' and u.deleted_at is null) as session,
       ${entitlementsColumn(plan)}`;

const ENTER_TEXT = `select set_config('app.tenant_id', $1, true) as t, set_config('role', '${APP_ROLE}', true) as r,
          set_config('${PERMISSIONS_SETTING}', '', true) as p, set_config('${ACTOR_SETTING}', '', true) as a`;
export const ENTER = prepared(ENTER_TEXT);

/**
 * The guard of a one-exchange transaction (TenantTransactions.runStatement): a last column of the
 * opening statement, which the framework sends itself before the route's statement, whatever that
 * statement is. Evaluated after the session column has left the caller's permissions in
 * `app.permissions`, it makes the transaction read-only for a caller without the route's permission
 * (PostgreSQL's `transaction_read_only`, which may always be turned on mid-transaction). From there
 * no statement can write: an insert, update or delete fails (25006), the statements after it are
 * skipped and the COMMIT rolls back. So a refused caller commits nothing and publishes nothing, by
 * construction, before the guard in the process has judged the opening statement's answer. A
 * column rather than a statement of its own: one query fewer per request for pg to build and answer.
 */
const guardColumn = (permission: string) =>
  `case when string_to_array(current_setting('${PERMISSIONS_SETTING}', true), ',') && array[${permission}::text, '*'] then true
            else set_config('transaction_read_only', 'on', true) = '' end as allowed`;

/** The opening statement of a one-exchange transaction: tenant, session, caller, and the guard ($4: the permission). */
const enterWithSessionGuardedText = (plan: PlanSql) => `${enterWithSessionText(plan)},
       ${guardColumn('$4')}`;

/** The same without a session ($2: the permission): the caller holds nothing, so the transaction turns read-only. */
export const ENTER_GUARDED = prepared(`${ENTER_TEXT},
          ${guardColumn('$2')}`);

/** The opening statements a TenantTransactions sends, made once at boot for the installation. */
export interface OpeningStatements {
  enter: string;
  enterWithSession: string;
  enterWithToken: string;
  enterGuarded: string;
  enterWithSessionGuarded: string;
}

/**
 * The opening statements with the transaction's statement_timeout (database.statement_timeout_ms)
 * as one more column, set transaction-locally for every statement after it: so the limit holds
 * whatever connection runs the transaction, PostgreSQL's own or a pooler's in transaction mode,
 * which refuses a start-up parameter (or, told to ignore it, drops the limit). A literal, decided
 * at boot: one set_config in a statement the transaction sends anyway, no statement of its own.
 * Undefined: the statements as they are, under the server's setting.
 */
export function openingStatements(statementTimeoutMs: number | undefined, plan?: PlanSql): OpeningStatements {
  const timed =
    statementTimeoutMs === undefined
      ? (text: string) => prepared(text)
      : (text: string) =>
          prepared(`${text},
       set_config('statement_timeout', '${Math.trunc(statementTimeoutMs)}', true) as statement_timeout`);
  return {
    enter: timed(ENTER),
    enterWithSession: timed(enterWithSessionText(plan)),
    enterWithToken: timed(enterWithTokenText(plan)),
    enterGuarded: timed(ENTER_GUARDED),
    enterWithSessionGuarded: timed(enterWithSessionGuardedText(plan)),
  };
}

export const TOUCH_INTERVAL_MS = 5 * 60_000;
export const TOUCH_SESSION = prepared(`
update sessions
   set last_seen_at = $2,
       expires_at = least($2::timestamptz + interval '30 days', created_at + interval '90 days')
 where id = $1
returning floor(extract(epoch from expires_at - $2::timestamptz))::int as seconds_left`);

/** A token's last use is recorded at most once a minute: precise enough to tell a live token from a dead one. */
export const TOKEN_TOUCH_INTERVAL_MS = 60_000;
export const TOUCH_TOKEN = prepared(`update access_tokens set last_used_at = $2 where id = $1`);

export function sessionFrom(row: EnterRow | undefined, defaults: EntitlementDefaults = EVERYTHING): SessionInfo | null {
  const found = row?.session;
  if (!found) return null;
  return {
    id: found.id,
    userId: found.user_id,
    permissions: new Set(found.permissions),
    entitlements: resolveEntitlements(row?.entitlements, defaults),
    lastSeenAt: new Date(found.last_seen_at),
    ...(found.token ? { via: 'token' as const, ...(found.name !== undefined ? { tokenName: found.name } : {}) } : {}),
  };
}

/** A session is touched (its expiry slid forward) at most once every TOUCH_INTERVAL_MS. */
export const needsTouch = (session: SessionInfo, now: Date): boolean =>
  now.getTime() - session.lastSeenAt.getTime() >
  (session.via === 'token' ? TOKEN_TOUCH_INTERVAL_MS : TOUCH_INTERVAL_MS);
