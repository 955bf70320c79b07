import type { SubscriptionDefinition } from '../../framework/entity/define.ts';
import { blobStoreFor } from '../../framework/storage/index.ts';
import { isBlobKey } from '../../framework/storage/blob-store.ts';

/**
 * file.deleted → the blob goes. The row is already gone (committed), so a blob missing now is
 * not an error (a retry after a removal that worked, or reconcile got there first); a storage
 * failure throws and the delivery is retried, then dead-lettered.
 */
export const blobRemoval: SubscriptionDefinition = {
  name: 'file-blob-removal',
  event: 'file.deleted',
  async handle(_ctx, event, services) {
    const key = event.payload.storageKey;
    if (typeof key !== 'string' || !isBlobKey(key)) {
      services.log.error({ eventId: event.id }, 'file.deleted without a storage key');
      return;
    }
    const removed = await blobStoreFor(services.config).remove(key);
    if (!removed) services.log.info({ storageKey: key }, 'blob already gone');
  },
};
