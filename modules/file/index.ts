import { defineModule } from '../../framework/entity/define.ts';
import { blobCapabilitiesFor } from '../../framework/storage/index.ts';
import { fileRoutes } from './routes.ts';
import { blobRemoval } from './blob-removal.ts';
import { fileReconcile } from './reconcile.ts';
import { FILES_PAGE, registerFilePages } from './files.admin.ts';
import { fileProblems } from './problems.ts';
import { usedBytes } from './upload.ts';

/** Uploaded blobs with a record per file (docs/files.md). */
export const fileModule = defineModule({
  name: 'file',
  description: 'Uploaded blobs with a record per file',
  problems: fileProblems,
  permissions: [
    { name: 'file:read', description: 'List and read file records, download their bytes' },
    { name: 'file:manage', description: 'Upload and delete files' },
  ],
  features: [{ name: 'file.public_links', description: 'Public files: an upload anyone may download by its link' }],
  limits: [
    {
      name: 'file.storage_bytes',
      unit: 'bytes',
      description: 'The bytes of the tenant’s stored files (files.quota_bytes stays the installation’s ceiling).',
      use: usedBytes,
    },
  ],
  events: ['file.uploaded', 'file.deleted'],
  routes: fileRoutes,
  subscriptions: [blobRemoval],
  // Reconcile lists the store: registered only when the store can.
  jobs: (config) => (blobCapabilitiesFor(config).listable ? [fileReconcile] : []),
  // No generated pages (a file is uploaded, not typed in): the hand-written Files page (files.admin.ts).
  admin: {
    label: 'Files',
    resourcePages: false,
    pages: [registerFilePages],
    sidebar: [{ label: 'Files', path: FILES_PAGE, order: 40 }],
  },
});
