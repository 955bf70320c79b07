import { createHash, randomUUID } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import Type from 'typebox';
import { StringEnum } from '../../entity/string-enum.ts';
import type { Selectable } from 'kysely';
import type { Services } from '../../services.ts';
import type { TxContext } from '../../context/tx.ts';
import type { TenantRef } from '../../context/tenant.ts';
import type { Database } from '../../db/types.ts';
import { tenantById } from '../../context/tenant-lookup.ts';
import { blobStoreFor } from '../../storage/index.ts';
import { DateTime } from '../../entity/date-time.ts';
import { named } from '../../openapi/schema-name.ts';
import { toProblem } from '../../http/problems.ts';
import { tenantArchive } from './archive.ts';

export type TenantExportRow = Selectable<Database['tenant_exports']>;

/** How long an archive and its download link stay. */
export const EXPORT_LIFETIME_MS = 24 * 60 * 60_000;

/** The path of an export's status, and of its archive (opened by a signed link). */
export const EXPORTS_PATH = '/api/v1/tenant/exports';
export const exportPath = (id: string) => `${EXPORTS_PATH}/${id}`;
const archivePath = (id: string) => `${EXPORTS_PATH}/${id}/archive`;

/** What an export's link opens: this export's archive, of this tenant. */
export const linkSubject = (tenantId: string, id: string) => `tenant-export:${tenantId}:${id}`;

export const TenantExportStatus = named(
  Type.Object(
    {
      id: Type.String({ format: 'uuid' }),
      status: StringEnum(['queued', 'running', 'done', 'failed']),
      size: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
        description: 'Bytes of the archive, once written',
      }),
      sha256: Type.Union([Type.String(), Type.Null()], { description: 'SHA-256 of the archive, hex' }),
      manifest: Type.Unknown({
        description:
          "The archive's manifest.json, once written (null before): each table's row count and SHA-256, each file's size and SHA-256, what was left out and why",
      }),
      download: Type.Union([Type.String(), Type.Null()], {
        description:
          'A link to the archive (a .tar.gz) that opens without a session until expiresAt; null until it is written and after it expired',
      }),
      expiresAt: Type.Union([DateTime(), Type.Null()]),
      problem: Type.Unknown({ description: 'Why a failed export stopped (its code and detail); null otherwise' }),
      createdAt: DateTime(),
      finishedAt: Type.Union([DateTime(), Type.Null()]),
    },
    { additionalProperties: false },
  ),
  'TenantExportStatus',
);

/**
 * An export as its routes answer it; a finished one carries its signed download link while it
 * lasts, on `origin` (an absolute link to another tenant's host) or relative to the host asked.
 */
export function exportStatus(services: Services, tenant: TenantRef, row: TenantExportRow, now: Date, origin = '') {
  const live = row.status === 'done' && row.expires_at !== null && row.expires_at > now;
  let download: string | null = null;
  if (live) {
    const expires = Math.floor(row.expires_at!.getTime() / 1000);
    const signature = services.links.sign(linkSubject(tenant.id, row.id), expires);
    download = `${origin}${archivePath(row.id)}?expires=${expires}&signature=${signature}`;
  }
  return {
    id: row.id,
    status: row.status,
    size: row.size === null ? null : Number(row.size),
    sha256: row.sha256,
    manifest: row.manifest ?? null,
    download,
    expiresAt: row.expires_at,
    problem: row.problem ?? null,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
  };
}

/**
 * Records a new export of the transaction's tenant, queued, started by its actor: none when the
 * operator starts a customer's (withinTenant), whose people are never named in a customer's rows.
 */
export async function queueTenantExport(tx: TxContext): Promise<TenantExportRow> {
  return tx.db.insertInto('tenant_exports').values({ created_by: tx.actorId }).returningAll().executeTakeFirstOrThrow();
}

/** Counts and hashes the bytes on their way to the store. */
class Meter extends Transform {
  size = 0;
  readonly hash = createHash('sha256');
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    this.hash.update(chunk);
    done(null, chunk);
  }
}

/**
 * Writes one export's archive into the blob store, streamed (archive.ts), then records its size,
 * digest, manifest and expiry: from then its signed link opens it. A failure leaves no blob and
 * marks nothing (the queue retries); the last attempt's is recorded as the export's problem.
 */
export async function runTenantExport(services: Services, tenantId: string, exportId: string): Promise<void> {
  const tenant = await tenantById(services.db, tenantId);
  if (!tenant) return;
  const started = await services.transactions.run(tenant, async (tx) => {
    const row = await tx.db
      .selectFrom('tenant_exports')
      .selectAll()
      .where('id', '=', exportId)
      .forUpdate()
      .executeTakeFirst();
    if (!row || row.status === 'done' || row.status === 'failed') return undefined;
    await tx.db
      .updateTable('tenant_exports')
      .set({ status: 'running', updated_at: tx.now })
      .where('id', '=', exportId)
      .execute();
    return row;
  });
  if (!started) return;
  const store = blobStoreFor(services.config);
  const key = randomUUID();
  const now = services.clock.now();
  const { stream, manifest } = tenantArchive(services, tenant, now);
  const meter = new Meter();
  stream.on('error', (err) => meter.destroy(err));
  await store.put(key, stream.pipe(meter));
  const written = await manifest;
  try {
    await services.transactions.run(tenant, async (tx) => {
      await tx.db
        .updateTable('tenant_exports')
        .set({
          status: 'done',
          storage_key: key,
          size: meter.size,
          sha256: meter.hash.digest('hex'),
          manifest: JSON.stringify(written),
          finished_at: tx.now,
          updated_at: tx.now,
          expires_at: new Date(tx.now.getTime() + EXPORT_LIFETIME_MS),
        })
        .where('id', '=', exportId)
        .execute();
    });
  } catch (err) {
    await store.remove(key).catch(() => false);
    throw err;
  }
}

/** Records why an export stopped (its last attempt failed). */
export async function stopTenantExport(
  services: Services,
  tenantId: string,
  exportId: string,
  err: unknown,
): Promise<void> {
  const tenant = await tenantById(services.db, tenantId);
  if (!tenant) return;
  const stopped = toProblem(err).toDocument();
  await services.transactions.run(tenant, (tx) =>
    tx.db
      .updateTable('tenant_exports')
      .set({
        status: 'failed',
        problem: JSON.stringify({ code: stopped.code, detail: stopped.detail }),
        finished_at: tx.now,
        updated_at: tx.now,
      })
      .where('id', '=', exportId)
      .where('status', 'in', ['queued', 'running'])
      .execute(),
  );
}

/**
 * Removes the archives whose link has expired (a per-tenant job of the declaring module), so an
 * archive lives no longer than its link.
 */
export async function purgeExpiredExports(tx: TxContext, services: Services): Promise<number> {
  // The keys are read before they are cleared: RETURNING would give the cleared column.
  const expired = await tx.db
    .selectFrom('tenant_exports')
    .select(['id', 'storage_key'])
    .where('expires_at', '<=', tx.now)
    .where('storage_key', 'is not', null)
    .forUpdate()
    .execute();
  if (expired.length === 0) return 0;
  await tx.db
    .updateTable('tenant_exports')
    .set({ storage_key: null, updated_at: tx.now })
    .where(
      'id',
      'in',
      expired.map((r) => r.id),
    )
    .execute();
  const keys = expired.map((r) => r.storage_key!);
  tx.afterCommit(async () => {
    const store = blobStoreFor(services.config);
    for (const key of keys) await store.remove(key).catch(() => false);
  });
  return keys.length;
}
