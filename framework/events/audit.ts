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
insert into audit_events (event_id, name, actor_id, occurred_at, payload, request_id)
select o.event_id, o.name, o.actor_id, o.occurred_at, o.payload, o.request_id
  from outbox o
 where o.id = any($1::bigint[]) and o.tenant_id = app_tenant_id()
on conflict do nothing`;

/**
 * The statements that record events in their tenants' audit trails: per tenant, its tenant set,
 * then one insert of all its events; at the end no tenant set. Run in order, inside the
 * transaction that claimed the events (the relay's), so an event is recorded exactly when it is
 * relayed: no queue, job or transaction of its own per event.
 */
export function auditStatements(events: readonly DeliveredEvent[]): pg.QueryConfig[] {
  return perTenant(
    events,
    (e) => e.tenantId,
    (batch) => {
      const rows = batch.map((e) => ({
        event_id: e.id,
        name: e.name,
        actor_id: e.actorId,
        occurred_at: e.occurredAt,
        payload: e.payload,
      }));
      return preparedQuery(RECORD, [JSON.stringify(rows)]);
    },
  );
}

/** The same statements for outbox rows the caller's transaction has claimed (the relay's). */
export function auditFromOutboxStatements(rows: readonly { id: string; tenant_id: string }[]): pg.QueryConfig[] {
  return perTenant(
    rows,
    (r) => r.tenant_id,
    (batch) => preparedQuery(RECORD_FROM_OUTBOX, [batch.map((r) => r.id)]),
  );
}

function perTenant<T>(
  items: readonly T[],
  tenantOf: (item: T) => string,
  record: (batch: T[]) => pg.QueryConfig,
): pg.QueryConfig[] {
  const byTenant = new Map<string, T[]>();
  for (const item of items) {
    const batch = byTenant.get(tenantOf(item));
    if (batch) batch.push(item);
    else byTenant.set(tenantOf(item), [item]);
  }
  const statements: pg.QueryConfig[] = [];
  for (const [tenantId, batch] of byTenant) statements.push(preparedQuery(AS_TENANT, [tenantId]), record(batch));
  if (statements.length > 0) statements.push(preparedQuery(NO_TENANT));
  return statements;
}
