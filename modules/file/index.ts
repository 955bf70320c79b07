import { defineModule } from '../../framework/entity/define.ts';
import { blobStoreFor } from '../../framework/storage/index.ts';
import { fileRoutes } from './routes.ts';
import { blobRemoval } from './blob-removal.ts';
import { fileReconcile } from './reconcile.ts';

/** Uploaded blobs with a record per file (docs/files.md). */
export const fileModule = defineModule({
  name: 'file',
  description: 'Uploaded blobs with a record per file',
  permissions: [
    { name: 'file:read', description: 'List and read file records, download their bytes' },
    { name: 'file:manage', description: 'Upload and delete files' },
  ],
  events: ['file.uploaded', 'file.deleted'],
  routes: fileRoutes,
  subscriptions: [blobRemoval],
  // Reconcile lists the store: registered only when the store can.
  jobs: (config) => (blobStoreFor(config).capabilities.listable ? [fileReconcile] : []),
  // Files are uploaded and listed through the API; the shell shows no pages for them.
  admin: { resourcePages: false },
});
