import type { Services, TxContext } from '../../framework/entity/define.ts';
import { tenantUrl } from '../../framework/tenancy/tenant-url.ts';

/** Where the set-password page lives on every tenant host. */
export const RESET_PAGE_PATH = '/auth/reset';
/** The same page once the password is set by a form post: it says so and links to sign in. */
export const RESET_DONE_PATH = `${RESET_PAGE_PATH}?done=1`;

/** The mailed set-password link, the only place the raw token ever appears. */
export async function setPasswordLink(ctx: TxContext, services: Services, rawToken: string): Promise<string> {
  return tenantUrl(ctx, services, `${RESET_PAGE_PATH}?token=${encodeURIComponent(rawToken)}`);
}
