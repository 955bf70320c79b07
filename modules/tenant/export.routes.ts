import Type from 'typebox';
import {
  defineRoute,
  type AnyRoute,
  type JobDefinition,
  type QueueDefinition,
  type Services,
  type SubscriptionDefinition,
  type TxContext,
} from '../../framework/entity/define.ts';
import { notFound, problem } from '../../framework/errors.ts';
import { withinTenant } from '../../framework/tenancy/create-tenant.ts';
import { tenantUrl } from '../../framework/tenancy/tenant-url.ts';
import { readTenant, tenantRef } from './tenant-store.ts';
import { answer } from '../../framework/http/entity-route-parts.ts';
import { problemResponse } from '../../framework/openapi/problem-schema.ts';
import { streamFrom, streamResponses } from '../../framework/http/stream.ts';
import { blobStoreFor, type ByteRange } from '../../framework/storage/index.ts';
import {
  EXPORTS_PATH,
  TenantExportStatus,
  exportPath,
  exportStatus,
  linkSubject,
  purgeExpiredExports,
  queueTenantExport,
  runTenantExport,
  stopTenantExport,
} from '../../framework/bulk/tenant-export/tenant-export.ts';

const TargetQuery = Type.Object(
  {
    tenantId: Type.Optional(
      Type.String({
        format: 'uuid',
        description: "The operator only, at the operator's host: the tenant whose export this is",
      }),
    ),
  },
  { additionalProperties: false },
);
type TargetQueryValue = { tenantId?: string };

/**
 * Runs `fn` in the export's tenant: the host's, or, for the operator at the operator's host, the
 * tenant tenantId names (withinTenant: its rows, its outbox), with the origin its download link is
 * built on (that tenant's primary host; none for the host's own tenant, whose link is relative).
 */
async function inTarget<T>(
  tx: TxContext,
  services: Services,
  query: TargetQueryValue,
  fn: (inner: TxContext, origin: string) => Promise<T>,
): Promise<T> {
  if (query.tenantId === undefined || query.tenantId === tx.tenant.id) return fn(tx, '');
  if (!tx.tenant.isOperator)
    throw problem('AUTH_NOT_OPERATOR', "Only the operator, at the operator's host, exports another tenant");
  const target = tenantRef(await readTenant(tx, query.tenantId));
  return withinTenant(tx, target, async (inner) => fn(inner, await tenantUrl(inner, services, '')));
}

/** The event that hands an export to the worker, and its queue. */
export const EXPORT_REQUESTED = 'tenant.export_requested';
const EXPORT_QUEUE = 'tenant-export';
const access = { permission: 'tenant:export' };
const tags = ['tenant'];

/**
 * A whole tenant's export (issue 48, point 5): its administrator (tenant:export) starts it at the
 * tenant's host; a worker writes the archive (framework/bulk/tenant-export/) into the blob store;
 * its status carries a download link signed until it expires. The operator exports any tenant with
 * `npm run tenant:export -- <slug> <file>`.
 */
export const exportRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'POST',
    url: '/api/v1/tenant/export',
    operationId: 'tenant-export-create',
    summary: "Export the tenant's data",
    description:
      "Queues an export of this tenant: a worker writes one archive (a .tar.gz) with every table's rows as NDJSON (tables/<table>/<n>.ndjson), every file's bytes (files/files/<id>) and manifest.json with each table's row count and SHA-256 and each file's size and SHA-256. Secrets are left out (password hashes, token hashes, signing secrets, sessions, set-password links; the manifest says which and why). Answered 202 with the export's status and Location; its status gives the download link once the archive is written, good for 24 hours. " +
      "At the operator's host, tenantId names the customer to export (the operator's own tenant without it): the export is that tenant's, its status is read with the same tenantId, and its link is on that tenant's primary host. Elsewhere tenantId naming another tenant is 403 AUTH_NOT_OPERATOR; an unknown one is 404. An Idempotency-Key makes a retry answer the same export.",
    tags,
    access,
    idempotent: true,
    publishes: [EXPORT_REQUESTED],
    schema: {
      querystring: TargetQuery,
      response: { 202: answer(TenantExportStatus, 'The export, queued') },
    },
    handler: async ({ tx, query, reply, services }) =>
      inTarget(tx, services, query as TargetQueryValue, async (inner, origin) => {
        const row = await queueTenantExport(inner);
        inner.publish(EXPORT_REQUESTED, { id: row.id });
        const other = inner.tenant.id !== tx.tenant.id ? `?tenantId=${inner.tenant.id}` : '';
        reply.code(202).header('location', `${exportPath(row.id)}${other}`);
        return exportStatus(services, inner.tenant, row, tx.now, origin);
      }),
  }),
  defineRoute({
    method: 'GET',
    url: `${EXPORTS_PATH}/:id`,
    operationId: 'tenant-export-read',
    summary: "An export's status and download link",
    description:
      "At the operator's host, tenantId names the customer whose export it is (as it was started); its download link is then an absolute URL on that tenant's primary host.",
    tags,
    access,
    schema: {
      params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
      querystring: TargetQuery,
      response: { 200: answer(TenantExportStatus, 'The export') },
    },
    handler: async ({ tx, params, query, services }) =>
      inTarget(tx, services, query as TargetQueryValue, async (inner, origin) => {
        const row = await inner.db
          .selectFrom('tenant_exports')
          .selectAll()
          .where('id', '=', params.id)
          .executeTakeFirst();
        if (!row) throw notFound();
        return exportStatus(services, inner.tenant, row, tx.now, origin);
      }),
  }),
  defineRoute({
    method: 'GET',
    url: `${EXPORTS_PATH}/:id/archive`,
    operationId: 'tenant-export-archive',
    summary: "Download an export's archive (signed link)",
    description:
      "The archive, application/gzip, to anybody holding the link its status gave (expires and signature), at the tenant's host, until it expires. A link that is not the service's, is for another export or tenant, or has expired answers the same 404 NOT_FOUND.",
    tags,
    access: 'public',
    hidesNoSite: true,
    schema: {
      params: Type.Object({ id: Type.String({ format: 'uuid' }) }),
      querystring: Type.Object({
        expires: Type.Integer({ minimum: 0 }),
        signature: Type.String({ maxLength: 100 }),
      }),
      response: {
        ...streamResponses('The archive (.tar.gz)', 'application/gzip'),
        404: problemResponse('No such archive, or a link that does not open it (NOT_FOUND)'),
      },
    },
    handler: async ({ tx, params, query, request, reply, services }) => {
      const { expires, signature } = query as { expires: number; signature: string };
      if (!services.links.opens(linkSubject(tx.tenant.id, params.id), expires, signature, tx.now)) throw notFound();
      const row = await tx.db.selectFrom('tenant_exports').selectAll().where('id', '=', params.id).executeTakeFirst();
      if (!row?.storage_key || row.status !== 'done' || !row.expires_at || row.expires_at <= tx.now) throw notFound();
      const store = blobStoreFor(services.config);
      const stat = await store.stat(row.storage_key);
      if (!stat) throw problem('BLOB_MISSING', 'The archive is missing from the file storage');
      const key = row.storage_key;
      const headers = {
        'content-disposition': `attachment; filename="tenant-${tx.tenant.slug}-${row.id}.tar.gz"`,
        'x-content-type-options': 'nosniff',
      };
      const options = { contentType: 'application/gzip', etag: `"${row.sha256}"`, headers, cacheControl: 'no-store' };
      return streamFrom(
        request,
        reply,
        {
          size: stat.size,
          mtime: stat.mtime,
          seekable: store.capabilities.seekable,
          open: (range?: ByteRange) => store.open(key, range),
        },
        options,
      );
    },
  }),
];

/** tenant.export_requested → the export's job on its queue, queued in the delivery's transaction. */
export const exportRequested: SubscriptionDefinition = {
  name: 'tenant-export-requested',
  event: EXPORT_REQUESTED,
  async handle(_ctx, event, _services, jobs) {
    const id = String(event.payload.id);
    await jobs!.send(EXPORT_QUEUE, { tenantId: event.tenantId, exportId: id }, { group: id });
  },
};

/** One export at a time per worker and tenant; retried, and its last failure recorded on it. */
export const exportQueue: QueueDefinition = {
  name: EXPORT_QUEUE,
  retry: () => ({ retryDelay: 10, retryDelayMax: 600, retryLimit: 3 }),
  groupConcurrency: 1,
  concurrency: 1,
  tenantConcurrency: 1,
  async work(data, services, attempt) {
    try {
      await runTenantExport(services, String(data.tenantId), String(data.exportId));
    } catch (err) {
      if (attempt.last) await stopTenantExport(services, String(data.tenantId), String(data.exportId), err);
      throw err;
    }
  },
};

/** Hourly, per tenant: an archive whose link has expired is removed from the blob store. */
export const exportPurge: JobDefinition = {
  name: 'tenant-export-purge',
  cron: '41 * * * *',
  perTenant: true,
  async run(ctx) {
    const removed = await ctx.transaction((tx) => purgeExpiredExports(tx, ctx.services));
    return { removed };
  },
};
