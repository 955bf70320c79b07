import { problem, type ProblemError } from '../errors.ts';

/**
 * What a unique index or an exclusion constraint protects, in the caller's words: the field(s) a
 * request sends whose value is taken (none for a key no request names, such as one subscription
 * per tenant), and the sentence a refusal says.
 */
export interface UniqueKey {
  /** API field names (as a body names them); each becomes an errors[] entry at /body/<field>. */
  fields: readonly string[];
  /** For people: what is already there, e.g. "A plan with this code already exists". */
  detail: string;
}

const keys = new Map<string, UniqueKey>();
/** The entities' keys (storage.unique, uniqueCodes), derived from their declarations as they are composed. */
const derived = new Map<string, UniqueKey>();

/**
 * Declares unique indexes and exclusion constraints of tables that are no entity's, by name (an
 * entity's keys come from its storage.unique). Each owner declares its own tables'
 * keys beside their row types (the framework's below, a module's in its tables file), so every
 * write that meets one, the generic operations', a module's own and the control plane's alike,
 * answers in the same words. A name declared twice must say the same thing.
 */
export function declareUniqueKeys(declared: Readonly<Record<string, UniqueKey>>): void {
  for (const [name, key] of Object.entries(declared)) {
    const known = keys.get(name);
    if (known && JSON.stringify(known) !== JSON.stringify(key))
      throw new Error(`unique key ${name} is declared twice, differently`);
    keys.set(name, key);
  }
}

/**
 * The keys composed entities derive from their declarations (entity/unique-keys.ts), set as each
 * composition is made: an entity's key is declared there, once, and never by hand here.
 */
export function deriveUniqueKeys(fromEntities: Readonly<Record<string, UniqueKey>>): void {
  for (const [name, key] of Object.entries(fromEntities)) derived.set(name, key);
}

/** Every declared key, by constraint or index name (the test that lists the database's keys reads it). */
export function declaredUniqueKeys(): ReadonlyMap<string, UniqueKey> {
  return new Map([...derived, ...keys]);
}

/** A primary key on a generated id (`<table>_pkey` over `id` alone) needs no declaration: no request sends an id. */
const GENERATED_ID: UniqueKey = { fields: [], detail: 'A resource with this id already exists' };

/** What the key protects: as declared, or a primary key's generated id. */
export function uniqueKeyOf(constraint: string): UniqueKey | undefined {
  return keys.get(constraint) ?? derived.get(constraint) ?? (constraint.endsWith('_pkey') ? GENERATED_ID : undefined);
}

/**
 * PostgreSQL's unique violation (23505) or exclusion violation (23P01) as the problem a caller can
 * act on: 409 ALREADY_EXISTS naming the field, never the constraint (its name is the schema's
 * business). An undeclared constraint still answers 409, in general words; the test over the
 * migrated schema keeps every one declared. Anything else: undefined.
 */
export function uniqueViolationProblem(err: { code?: string; constraint?: string }): ProblemError | undefined {
  if (err.code !== '23505' && err.code !== '23P01') return undefined;
  const key = err.constraint ? uniqueKeyOf(err.constraint) : undefined;
  if (!key) return problem('ALREADY_EXISTS', 'A resource with the same unique value already exists');
  const [only] = key.fields;
  return problem('ALREADY_EXISTS', key.detail, {
    ...(key.fields.length > 0
      ? { errors: key.fields.map((field) => ({ pointer: `/body/${field}`, message: 'is already used' })) }
      : {}),
    ...(key.fields.length === 1
      ? { extensions: { field: only } }
      : key.fields.length > 1
        ? { extensions: { fields: key.fields } }
        : {}),
  });
}

// The framework's own tables (migrations/framework, and the runner's migration_history). Keys no
// request names (the outbox's event ids, the audit trail's) are declared too, in words, so no
// refusal falls back to a constraint's name.
declareUniqueKeys({
  tenants_slug_key: { fields: ['slug'], detail: 'A tenant with this slug already exists' },
  tenants_single_operator: { fields: [], detail: 'The installation has its operator tenant already' },
  tenant_hosts_pkey: { fields: ['host'], detail: 'This host already belongs to a tenant' },
  tenant_hosts_one_primary: { fields: ['primary'], detail: 'The tenant has a primary host already' },
  outbox_event_id_key: { fields: [], detail: 'This event is recorded already' },
  audit_events_pkey: { fields: [], detail: 'This event is audited already' },
  processed_events_pkey: { fields: [], detail: 'This event was handled already' },
  revisions_pkey: { fields: [], detail: 'This revision is recorded already' },
  migration_history_pkey: { fields: [], detail: 'This migration is applied already' },
  // The identity tables (0013_identity.sql).
  users_tenant_id_id_key: { fields: [], detail: 'A user with this id already exists' },
  roles_pkey: { fields: ['name'], detail: 'A role of this name already exists' },
  sessions_tenant_id_id_hash_key: { fields: [], detail: 'This session exists already' },
  access_tokens_tenant_id_token_hash_key: { fields: [], detail: 'This access token exists already' },
  // Live changes (0015_live_positions.sql): one last position per tenant, written by the relay alone.
  live_positions_pkey: { fields: [], detail: 'This tenant has its stream position already' },
});
