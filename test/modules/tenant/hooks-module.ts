import { defineModule } from '../../../framework/entity/define.ts';

/**
 * A test-only module with a default role and a tenant-creation hook that fails for slugs
 * starting with "fail-" and, for slugs starting with "hold-", waits until the test lets it go.
 */
export const hookControl: { reached?: () => void; release?: Promise<void> } = {};

export const hooksModule = defineModule({
  name: 'tenanthooks',
  defaultRoles: { auditor: ['user:read'] },
  async onTenantCreated(ctx) {
    if (ctx.tenant.slug.startsWith('fail-')) throw new Error('creation hook failed on purpose');
    if (ctx.tenant.slug.startsWith('hold-')) {
      hookControl.reached?.();
      await hookControl.release;
    }
  },
});
