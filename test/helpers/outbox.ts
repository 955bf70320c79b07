import type { TestApp } from './app.ts';

export interface OutboxRow {
  name: string;
  payload: Record<string, unknown>;
  actor_id: string | null;
  tenant_id: string;
}

/** Committed outbox rows (read as the owner, all tenants) in order, optionally only those with the given names. */
export async function outboxRows(app: TestApp, ...names: string[]): Promise<OutboxRow[]> {
  const { rows } = await app.services.db.pool.query<OutboxRow>(
    `select name, payload, actor_id, tenant_id from outbox ${names.length ? 'where name = any($1)' : ''} order by id`,
    names.length ? [names] : [],
  );
  return rows;
}
