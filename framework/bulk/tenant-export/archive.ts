import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { CompiledQuery } from 'kysely';
import type pg from 'pg';
import type { Services } from '../../services.ts';
import type { TenantRef } from '../../context/tenant.ts';
import { blobStoreFor } from '../../storage/index.ts';
import { exportBlobTables, exportExclusions } from './exclusions.ts';
import { tarEnd, tarHeader, tarPadding } from './tar.ts';

/** Rows read per page of a table (each page its own short transaction). */
export const EXPORT_PAGE_ROWS = 1000;
/** The largest NDJSON part of a table: a table's rows are held in memory a part at a time, never whole. */
export const EXPORT_PART_BYTES = 4 * 1024 * 1024;
/** The archive's layout, named in its manifest. */
export const EXPORT_FORMAT = 'tenantry-tenant-export-1';

/** One table of the tenant: its columns and its primary key, read from the catalog. */
export interface TenantTable {
  name: string;
  columns: string[];
  key: string[];
}

export interface ManifestTable {
  rows: number;
  /** SHA-256 (hex) of the table's NDJSON, its parts in order. */
  sha256: string;
  parts: string[];
  /** Columns left out of every row (secrets), with why. */
  excluded?: { columns: string[]; reason: string };
}

export interface Manifest {
  format: typeof EXPORT_FORMAT;
  tenant: { id: string; slug: string };
  createdAt: string;
  tables: Record<string, ManifestTable>;
  /** Tables left out whole, with why. */
  excludedTables: Record<string, string>;
  files: { count: number; bytes: number; entries: Record<string, { size: number; sha256: string }> };
}

// Tables of tenants: row-level security and a tenant_id column, in the public schema. With FORCE or
// without it (the outbox, the sign-in counters: their owner sweeps every tenant's rows): the
// export reads as the restricted role, which the policy holds to the tenant either way.
const TENANT_TABLES = `
select c.relname as name,
       array(select a.attname::text from pg_attribute a
              where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped order by a.attnum) as columns,
       coalesce((select array_agg(a.attname::text order by k.n)
                   from pg_index i
                   cross join unnest(i.indkey) with ordinality as k(attnum, n)
                   join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
                  where i.indrelid = c.oid and i.indisprimary), '{}') as key
  from pg_class c join pg_namespace n on n.oid = c.relnamespace
 where n.nspname = 'public' and c.relkind = 'r' and c.relrowsecurity
   and exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped)
 order by c.relname`;

/** Every tenant table of the database, from its catalog. */
export async function tenantTables(pool: pg.Pool): Promise<TenantTable[]> {
  const { rows } = await pool.query<TenantTable>(TENANT_TABLES);
  return rows;
}

/** For the transaction only: its timestamps' JSON in UTC. */
const UTC = `select set_config('TimeZone', 'UTC', true)`;

const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`;

/**
 * One page of a table's rows in the tenant's transaction (row-level security keeps them the
 * tenant's), in its primary key's order after the previous page's last key: each row as a JSON
 * object of its columns, the excluded ones removed in the statement, so a secret never reaches
 * the process. The row comes as PostgreSQL's own JSON text, never parsed here: a numeric or a
 * bigint keeps every digit. The previous key goes in as JSON and is read back typed through the
 * table's own row type, so the comparison is the key's, not its text's.
 */
function pageStatement(table: TenantTable, after: boolean): string {
  const name = quote(table.name);
  const key = table.key.map((c) => `t.${quote(c)}`).join(', ');
  const previous = table.key.map((c) => `p.${quote(c)}`).join(', ');
  return `select (to_jsonb(t) - $1::text[])::text as row, jsonb_build_object(${table.key
    .map((c) => `'${c.replaceAll("'", "''")}', t.${quote(c)}`)
    .join(', ')})::text as key
  from ${name} t
  ${after ? `where (${key}) > (select ${previous} from jsonb_populate_record(null::${name}, $2::jsonb) p)` : ''}
  order by ${key} limit ${EXPORT_PAGE_ROWS}`;
}

/** Where the archive's bytes go, and the store they may be read from. */
type Chunks = AsyncGenerator<Buffer>;

/**
 * The tenant's export as a gzip-compressed ustar archive, produced as a stream (tar.ts): for each
 * tenant table, its rows as NDJSON parts `tables/<table>/<n>.ndjson` (secret columns and tables
 * left out: exclusions.ts); each blob a row names (a file's bytes) as `files/<table>/<name>`; and
 * `manifest.json` last, with every table's row count and SHA-256 and every file's size and
 * SHA-256. Nothing is ever whole in memory: a table is read a page at a time, written a part of at
 * most EXPORT_PART_BYTES at a time, and a file's bytes are streamed from the blob store.
 * `manifest` resolves once the stream has ended.
 */
export function tenantArchive(
  services: Services,
  tenant: TenantRef,
  now: Date,
): { stream: Readable; manifest: Promise<Manifest> } {
  let settle!: (manifest: Manifest) => void;
  let fail!: (err: unknown) => void;
  const manifest = new Promise<Manifest>((resolve, reject) => {
    settle = resolve;
    fail = reject;
  });
  manifest.catch(() => {});
  const tar = Readable.from(entries(services, tenant, now, settle, fail));
  const stream = tar.pipe(createGzip());
  tar.on('error', (err) => {
    fail(err);
    stream.destroy(err);
  });
  return { stream, manifest };
}

async function* entries(
  services: Services,
  tenant: TenantRef,
  now: Date,
  settle: (manifest: Manifest) => void,
  fail: (err: unknown) => void,
): Chunks {
  try {
    const manifest: Manifest = {
      format: EXPORT_FORMAT,
      tenant: { id: tenant.id, slug: tenant.slug },
      createdAt: now.toISOString(),
      tables: {},
      excludedTables: {},
      files: { count: 0, bytes: 0, entries: {} },
    };
    const exclusions = exportExclusions();
    for (const table of await tenantTables(services.db.pool)) {
      const exclusion = exclusions.get(table.name);
      if (exclusion && !exclusion.columns) {
        manifest.excludedTables[table.name] = exclusion.reason;
        continue;
      }
      if (table.key.length === 0) throw new Error(`tenant table ${table.name} has no primary key to export it by`);
      const excluded = exclusion?.columns ?? [];
      yield* tableEntries(services, tenant, table, excluded, now, (written) => {
        manifest.tables[table.name] = {
          ...written,
          ...(excluded.length > 0 ? { excluded: { columns: [...excluded], reason: exclusion!.reason } } : {}),
        };
      });
      const blobs = exportBlobTables().get(table.name);
      if (blobs) yield* blobEntries(services, tenant, table, blobs, now, manifest.files);
    }
    const body = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
    yield tarHeader('manifest.json', body.length, now);
    yield body;
    yield tarPadding(body.length);
    yield tarEnd();
    settle(manifest);
  } catch (err) {
    fail(err);
    throw err;
  }
}

/** A table's rows, page by page, as NDJSON parts of at most EXPORT_PART_BYTES. */
async function* tableEntries(
  services: Services,
  tenant: TenantRef,
  table: TenantTable,
  excluded: readonly string[],
  now: Date,
  done: (written: Omit<ManifestTable, 'excluded'>) => void,
): Chunks {
  const digest = createHash('sha256');
  const parts: string[] = [];
  let rows = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = function* (): Generator<Buffer> {
    if (pendingBytes === 0 && parts.length > 0) return;
    const name = `tables/${table.name}/${String(parts.length + 1).padStart(4, '0')}.ndjson`;
    parts.push(name);
    yield tarHeader(name, pendingBytes, now);
    yield* pending;
    yield tarPadding(pendingBytes);
    pending = [];
    pendingBytes = 0;
  };
  const first = pageStatement(table, false);
  const next = pageStatement(table, true);
  let after: string | undefined;
  for (;;) {
    const page = await services.transactions.run(tenant, async (tx) => {
      // Times are written in UTC whatever the server's zone, so an archive reads the same anywhere.
      await tx.db.executeQuery(CompiledQuery.raw(UTC));
      const query =
        after === undefined
          ? CompiledQuery.raw(first, [[...excluded]])
          : CompiledQuery.raw(next, [[...excluded], after]);
      return (await tx.db.executeQuery<{ row: string; key: string }>(query)).rows;
    });
    for (const { row } of page) {
      const line = Buffer.from(`${row}\n`);
      digest.update(line);
      rows += 1;
      if (pendingBytes + line.length > EXPORT_PART_BYTES && pendingBytes > 0) yield* flush();
      pending.push(line);
      pendingBytes += line.length;
    }
    if (page.length < EXPORT_PAGE_ROWS) break;
    after = page[page.length - 1]!.key;
  }
  yield* flush();
  done({ rows, sha256: digest.digest('hex'), parts });
}

/** The blobs a table's rows name, each streamed from the blob store with its size and digest. */
async function* blobEntries(
  services: Services,
  tenant: TenantRef,
  table: TenantTable,
  blobs: { key: string; name: string },
  now: Date,
  files: Manifest['files'],
): Chunks {
  const store = blobStoreFor(services.config);
  const text = `select ${quote(blobs.name)}::text as name, ${quote(blobs.key)}::text as key from ${quote(table.name)}
                 where ${quote(blobs.name)}::text > $1 order by ${quote(blobs.name)}::text limit ${EXPORT_PAGE_ROWS}`;
  let after = '';
  for (;;) {
    const page = await services.transactions.run(
      tenant,
      async (tx) => (await tx.db.executeQuery<{ name: string; key: string }>(CompiledQuery.raw(text, [after]))).rows,
    );
    for (const { name, key } of page) {
      const stat = await store.stat(key);
      if (!stat) throw new Error(`the blob of ${table.name} ${name} is missing from the store`);
      const path = `files/${table.name}/${name}`;
      yield tarHeader(path, stat.size, now);
      const digest = createHash('sha256');
      let size = 0;
      for await (const chunk of await store.open(key)) {
        const bytes = chunk as Buffer;
        digest.update(bytes);
        size += bytes.length;
        yield bytes;
      }
      if (size !== stat.size) throw new Error(`the blob of ${table.name} ${name} changed size while it was exported`);
      yield tarPadding(size);
      files.entries[path] = { size, sha256: digest.digest('hex') };
      files.count += 1;
      files.bytes += size;
    }
    if (page.length < EXPORT_PAGE_ROWS) break;
    after = page[page.length - 1]!.name;
  }
}
