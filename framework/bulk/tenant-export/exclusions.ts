/**
 * What a tenant's export leaves out (docs/operations.md, "A tenant's export"): secrets are never
 * exported. Each owner of a table declares, beside the table, the columns that hold a secret
 * (a password hash, a token hash, a signing secret), or the whole table when every row is one
 * (sessions, set-password tokens) or is no data of the tenant's (a cache of answers). The export
 * reads these declarations; test/framework/tenant-export.test.ts finds every column of a tenant
 * table named like a secret and fails on one not declared here.
 */

export interface ExportExclusion {
  /** The columns left out of every row; absent when the whole table is. */
  columns?: readonly string[];
  /** Why: said in the archive's manifest. */
  reason: string;
}

const exclusions = new Map<string, ExportExclusion>();

/** Declares what the export leaves out of a table: its secret columns, or (no columns) the whole table. */
export function declareExportExclusions(declared: Readonly<Record<string, ExportExclusion>>): void {
  for (const [table, exclusion] of Object.entries(declared)) exclusions.set(table, exclusion);
}

/** Everything declared so far, by table. */
export const exportExclusions = (): ReadonlyMap<string, ExportExclusion> => exclusions;

/**
 * A table whose rows name blobs in the blob store (a file's bytes): the export adds each named
 * blob as `files/<table>/<name>`, and its size and digest to the manifest.
 */
export interface ExportBlobs {
  /** The column holding the blob's key. */
  key: string;
  /** The column naming the blob in the archive (the row's id). */
  name: string;
}

const blobTables = new Map<string, ExportBlobs>();

export function declareExportBlobs(declared: Readonly<Record<string, ExportBlobs>>): void {
  for (const [table, blobs] of Object.entries(declared)) blobTables.set(table, blobs);
}

export const exportBlobTables = (): ReadonlyMap<string, ExportBlobs> => blobTables;

// The framework's own tables. Its answers cache holds what requests answered (their secrets
// withheld, but still the callers' own answers), for 24 hours: it is no data of the tenant's. Of
// the identity tables (migrations/framework/0013_identity.sql), a session is nothing but a
// credential, and an access token's hash is one. The outbox holds events on their way (the audit
// trail, audit_events, is exported) and live_positions a counter of the live streams.
declareExportExclusions({
  idempotency_keys: { reason: 'a 24-hour cache of answers to retried requests, not data of the tenant' },
  outbox: { reason: 'events on their way to subscribers; the audit trail (audit_events) holds every one relayed' },
  live_positions: { reason: 'the last position handed to the live streams, a counter, not data of the tenant' },
  sessions: { reason: 'every row is a credential (a signed-in session)' },
  access_tokens: { columns: ['token_hash'], reason: 'the hash of a personal access token is a credential' },
});
