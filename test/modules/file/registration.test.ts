import { describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { testConfig } from '../../helpers/config.ts';
import { moduleJobs } from '../../../framework/entity/define.ts';
import { useBlobStore, type BlobStore } from '../../../framework/storage/index.ts';
import { fileModule } from '../../../modules/file/index.ts';

/** A store that streams whole objects and cannot list them. */
const unlistable: BlobStore = {
  capabilities: { seekable: false, listable: false },
  put: async () => undefined,
  stat: async () => null,
  open: () => Readable.from([]),
  remove: async () => false,
};

describe('Jobs file-reconcile: not registered when the storage cannot list', () => {
  it('is registered with the local disk, and not with a store that cannot list', () => {
    const local = testConfig({ files: { dir: '/tmp/tenantry-registration-local' } });
    expect(moduleJobs(fileModule, local).map((j) => j.name)).toEqual(['file-reconcile']);
    const other = testConfig({ files: { dir: '/tmp/tenantry-registration-unlistable' } });
    useBlobStore(other, unlistable);
    expect(moduleJobs(fileModule, other)).toEqual([]);
  });
});
