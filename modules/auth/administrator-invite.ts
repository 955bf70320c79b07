import type { Services, TenantRef } from '../../framework/entity/define.ts';
import { mintSetPasswordToken, tokenExpiry } from './set-password-tokens.ts';
import { setPasswordLink } from './links.ts';
import { usersService } from '../user/users-service.ts';
import { invitationText } from './invitation-mail.ts';

export interface AdministratorLink {
  userId: string;
  email: string;
  /** True when the user was created now; false when an existing user of that address got a new link. */
  created: boolean;
  /** True when an existing user was given the admin role now (false when created, or already an admin). */
  adminRoleAdded: boolean;
  link: string;
  /** True when the link was also mailed (SMTP configured). */
  mailed: boolean;
  mailError?: string;
}

export class AdministratorInviteError extends Error {
  override name = 'AdministratorInviteError';
}

/**
 * Makes the person an administrator of the operator tenant (or of the tenant with the given slug,
 * for installations without SMTP, where invitation mail is not delivered) and returns a set-password link for
 * them: a new invited user holding admin, or the existing user of that address (given admin if
 * they lacked it) with a fresh link, which also serves to recover a lost operator password.
 * user.invited carries via: 'admin-invite', so the worker does not mint a second token that would
 * void the printed link. The link is mailed too when SMTP is configured.
 */
export async function inviteAdministrator(
  services: Services,
  email: string,
  displayName?: string,
  tenantSlug?: string,
): Promise<AdministratorLink> {
  // Read before any tenant is known, hence outside a transaction (tenants has no row-level security).
  const tenants = services.db.kysely.selectFrom('tenants').select(['id', 'slug', 'is_operator', 'status']);
  const found = await (tenantSlug
    ? tenants.where('slug', '=', tenantSlug)
    : tenants.where('is_operator', '=', true)
  ).executeTakeFirst();
  if (!found)
    throw new AdministratorInviteError(
      tenantSlug ? `there is no tenant ${tenantSlug}` : 'there is no operator tenant yet',
    );
  if (found.status !== 'active') throw new AdministratorInviteError(`tenant ${found.slug} is suspended`);
  const tenant: TenantRef = { id: found.id, slug: found.slug, isOperator: found.is_operator };

  // Everything is read through the transaction; the mail is sent after it committed.
  const issued = await services.transactions.run(tenant, async (ctx) => {
    const existing = await usersService.findByEmail(ctx, email);
    if (existing?.status === 'deactivated') {
      throw new AdministratorInviteError(
        `${existing.email} is a deactivated user of tenant ${tenant.slug}; use another address`,
      );
    }
    let adminRoleAdded = false;
    if (existing) {
      const after = await usersService.setRoles(ctx, existing, [...existing.roles, 'admin']);
      adminRoleAdded = !existing.roles.includes('admin') && after.includes('admin');
    }
    const user =
      existing ??
      (await usersService.invite(ctx, { email, displayName, roles: ['admin'] }, { payload: { via: 'admin-invite' } }));
    const purpose = existing?.status === 'active' ? 'reset' : 'invitation';
    const raw = await mintSetPasswordToken(ctx, user.id, purpose);
    const link = await setPasswordLink(ctx, services, raw);
    const named = await ctx.db
      .selectFrom('tenants')
      .select('name')
      .where('id', '=', tenant.id)
      .executeTakeFirstOrThrow();
    return {
      userId: user.id,
      email: user.email,
      created: !existing,
      adminRoleAdded,
      link,
      tenantName: named.name,
      purpose,
      expiresAt: tokenExpiry(ctx.now, purpose),
    } as const;
  });

  const { link } = issued;
  const result: AdministratorLink = {
    userId: issued.userId,
    email: issued.email,
    created: issued.created,
    adminRoleAdded: issued.adminRoleAdded,
    link,
    mailed: false,
  };
  if (services.mailer.mode === 'smtp') {
    try {
      await services.mailer.send({
        to: issued.email,
        subject: `You are invited to ${issued.tenantName}`,
        text: invitationText({
          name: displayName ?? '',
          tenant: issued.tenantName,
          link,
          expiresAt: issued.expiresAt,
          purpose: issued.purpose,
        }),
      });
      result.mailed = true;
    } catch (err) {
      // The printed link works regardless; a mail server problem must not hide it.
      result.mailError = (err as Error).message;
    }
  }
  return result;
}
