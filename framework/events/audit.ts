import type pg from 'pg';
import { preparedQuery } from '../db/statements.ts';
import type { DeliveredEvent } from '../entity/define.ts';

// audit_events is a tenant-owned table with row-level security forced, for its owner too: each
// tenant's rows are written with that tenant set, so the policy checks every row the relay writes.
const AS_TENANT = `select set_config('app.tenant_id', $1, true)`;
const NO_TENANT = `select set_config('app.tenant_id', '', true)`;
// The event id is the key: an event relayed again (a crash after the claim) is recorded once.
const RECORD = `
insert into audit_events (event_id, name, actor_id, occurred_at, payload)
select e.event_id, e.name, e.actor_id, e.occurred_at, e.payload
  from jsonb_to_recordset($1::jsonb) as e(event_id uuid, name text, actor_id uuid, occurred_at timestamptz, payload jsonb)
on conflict do nothing`;
// The relay's form: the rows it claimed, copied from the outbox by id within PostgreSQL, so no
// payload travels to the process and back as JSON to be parsed again. The relay reads the outbox
// as its owner (row-level security not forced there), hence the explicit tenant.
const RECORD_FROM_OUTBOX = `
insert into audit_events (event_id, name, actor_id, occurred_at, payload, request_id, actor_kind, actor_name)
select o.event_id, o.name, o.actor_id, o.occurred_at, o.payload, o.request_id, o.actor_kind, o.actor_name
  from outbox o
 where o.id = any($1::bigint[]) and o.tenant_id = app_tenant_id()
on conflict do nothing`;
// An operator's event about a customer tenant (ModuleDefinition.operatorEventsAbout), recorded in
// that tenant's trail too: done by the operator, with no user and no request of the operator's named.
const RECORD_FOR_CONCERNED_TENANT = `
insert into audit_events (event_id, name, actor_id, occurred_at, payload, request_id, actor_kind, actor_name)
select o.event_id, o.name, null, o.occurred_at, o.payload, null, 'operator', null
  from outbox o
 where o.id = any($1::bigint[])
on conflict do nothing`;

/**
 * The statements that record events in their tenants' audit trails: per tenant, its tenant set,
 * then one insert of all its events; at the end no tenant set. Run in order, inside the
 * transaction that claimed the events (the relay's), so an event is recorded exactly when it is
 * relayed: no queue, job or transaction of its own per event.
 */
export function auditStatements(events: readonly DeliveredEvent[]): pg.QueryConfig[] {
  const byTenant = groupBy(events, (e) => e.tenantId);
  const statements: pg.QueryConfig[] = [];
  for (const [tenantId, batch] of byTenant) {
    const rows = batch.map((e) => ({
      event_id: e.id,
      name: e.name,
      actor_id: e.actorId,
      occurred_at: e.occurredAt,
      payload: e.payload,
    }));
    statements.push(preparedQuery(AS_TENANT, [tenantId]), preparedQuery(RECORD, [JSON.stringify(rows)]));
  }
  if (statements.length > 0) statements.push(preparedQuery(NO_TENANT));
  return statements;
}

/** A claimed outbox row, as the relay holds it. */
export interface ClaimedRow {
  id: string;
  tenant_id: string;
  name: string;
  payload: Record<string, unknown>;
}

/**
 * The customer tenant an operator's event concerns, from the declarations (event → the payload
 * field naming the tenant); undefined for any other event, or one naming its own tenant.
 */
export type ConcernedTenantOf = (row: ClaimedRow) => string | undefined;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** ConcernedTenantOf from the modules' operatorEventsAbout declarations. */
export function concernedTenantOf(fields: ReadonlyMap<string, string>): ConcernedTenantOf {
  return (row) => {
    const field = fields.get(row.name);
    if (!field) return undefined;
    const value = row.payload?.[field];
    return typeof value === 'string' && UUID.test(value) && value !== row.tenant_id ? value : undefined;
  };
}

/** The same statements for outbox rows the caller's transaction has claimed (the relay's). */
export function auditFromOutboxStatements(
  rows: readonly ClaimedRow[],
  concerned: ConcernedTenantOf = () => undefined,
): pg.QueryConfig[] {
  const own = groupBy(rows, (r) => r.tenant_id);
  const about = new Map<string, ClaimedRow[]>();
  for (const row of rows) {
    const tenant = concerned(row);
    if (!tenant) continue;
    const batch = about.get(tenant);
    if (batch) batch.push(row);
    else about.set(tenant, [row]);
  }
  const statements: pg.QueryConfig[] = [];
  for (const tenantId of new Set([...own.keys(), ...about.keys()])) {
    statements.push(preparedQuery(AS_TENANT, [tenantId]));
    const mine = own.get(tenantId);
    if (mine) statements.push(preparedQuery(RECORD_FROM_OUTBOX, [mine.map((r) => r.id)]));
    const theirs = about.get(tenantId);
    if (theirs) statements.push(preparedQuery(RECORD_FOR_CONCERNED_TENANT, [theirs.map((r) => r.id)]));
  }
  if (statements.length > 0) statements.push(preparedQuery(NO_TENANT));
  return statements;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const batch = groups.get(keyOf(item));
    if (batch) batch.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}
