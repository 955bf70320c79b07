import { sql } from 'kysely';
import type { TxContext } from '../context/tx.ts';
import type { AdminPerson } from '../entity/define.ts';

/** What the header says on every signed-in page: where (the tenant) and who (the signed-in person). */
export interface WhoAndWhere {
  /** The tenant's name, "Acme Inc.". */
  tenant: string;
  /** The signed-in person as people know them: their name, else their address; empty when no module names people. */
  person: string;
  /** Their address, when the name is shown (the header gives it as the name's title). */
  email: string;
}

/**
 * The tenant's name (the framework's tenants row) and the signed-in person (as the module that
 * manages people names them, ModuleDefinition.adminPerson), read in the page's own transaction
 * (tx.db, never the pool), both behind row-level security. Null without a session.
 */
export async function whoAndWhere(tx: TxContext, people: AdminPerson | undefined): Promise<WhoAndWhere | null> {
  if (!tx.session) return null;
  const { rows } = await sql<{ tenant: string }>`select name as tenant from tenants where id = ${tx.tenant.id}`.execute(
    tx.db,
  );
  const row = rows[0];
  if (!row) return null;
  const person = people ? await people.find(tx as TxContext<never>, tx.session.userId) : null;
  const email = person?.email ?? '';
  return { tenant: row.tenant, person: person?.name.trim() || email, email };
}
