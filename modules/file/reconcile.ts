import type { JobDefinition } from '../../framework/entity/define.ts';
import { blobStoreFor } from '../../framework/storage/index.ts';

/** Blobs younger than this may belong to an upload whose row is being written. */
export const ORPHAN_AGE_MS = 60 * 60 * 1000;
export const RECONCILE_BATCH = 500;

/**
 * file-reconcile: removes blobs no row names (an upload whose row never came: a crash between the
 * bytes and the row). Not per tenant: the question "which of these keys does a row name" spans
 * every tenant, so it goes to file_keys_named(), a security-definer function that answers only
 * with keys it was given (migrations/file/0001_files.sql), on a connection with no transaction.
 */
export const fileReconcile: JobDefinition = {
  name: 'file-reconcile',
  cron: '45 3 * * *',
  perTenant: false,
  async run(ctx) {
    const { services } = ctx;
    const store = blobStoreFor(services.config);
    if (!store.list) return { skipped: 'the store cannot list' };
    const before = new Date(ctx.now.getTime() - ORPHAN_AGE_MS);
    let seen = 0;
    let removed = 0;
    let batches = 0;
    let batch: string[] = [];
    const flush = async () => {
      batches += 1;
      const rows = await services.db.kysely
        .selectNoFrom((eb) => eb.fn<string>('file_keys_named', [eb.val(batch)]).as('key'))
        .execute();
      // The framework's own blobs (an import's upload, a tenant's export) are named there.
      const held = await services.db.kysely
        .selectNoFrom((eb) => eb.fn<string>('framework_blob_keys_named', [eb.val(batch)]).as('key'))
        .execute();
      const named = new Set([...rows, ...held].map((r) => r.key));
      const orphans = batch.filter((key) => !named.has(key));
      // A bucket removes the batch in one request (DeleteObjects); the local disk one by one.
      if (store.removeMany) removed += orphans.length > 0 ? await store.removeMany(orphans) : 0;
      else for (const key of orphans) if (await store.remove(key)) removed += 1;
      batch = [];
    };
    for await (const key of store.list(before)) {
      seen += 1;
      batch.push(key);
      if (batch.length === RECONCILE_BATCH) await flush();
    }
    if (batch.length > 0) await flush();
    const incomplete = (await store.purgeIncomplete?.(before)) ?? 0;
    return { seen, batches, removed, incomplete };
  },
};
