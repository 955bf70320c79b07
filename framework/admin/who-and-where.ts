import { sql } from 'kysely';
import type { TxContext } from '../context/tx.ts';

/** What the header says on every signed-in page: where (the tenant) and who (the signed-in person). */
export interface WhoAndWhere {
  /** The tenant's name, "Acme Inc.". */
  tenant: string;
  /** The signed-in person as people know them: their name, else their address. */
  person: string;
  /** Their address, when the name is shown (the header gives it as the name's title). */
  email: string;
}

/**
 * The tenant's name and the signed-in person, read in the page's own transaction (tx.db, never
 * the pool): one statement on the tenant's row and the person's (users is an identity table the
 * framework reads, access/identity-tables.ts), both behind row-level security. Null without a
 * session.
 */
export async function whoAndWhere(tx: TxContext): Promise<WhoAndWhere | null> {
  if (!tx.session) return null;
  const { rows } = await sql<{ tenant: string; display_name: string | null; email: string | null }>`
    select t.name as tenant, u.display_name, u.email
      from tenants t left join users u on u.tenant_id = t.id and u.id = ${tx.session.userId}
     where t.id = ${tx.tenant.id}`.execute(tx.db);
  const row = rows[0];
  if (!row) return null;
  const email = row.email ?? '';
  return { tenant: row.tenant, person: row.display_name?.trim() || email, email };
}
