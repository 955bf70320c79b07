import type { SubscriptionDefinition } from '../../framework/entity/define.ts';
import {
  mintSetPasswordToken,
  tokenExpiry,
  TOKEN_LIFETIME_HOURS,
  type SetPasswordPurpose,
} from './set-password-tokens.ts';
import { formatDateTime } from '../../framework/format.ts';
import { setPasswordLink } from './links.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { usersService } from '../user/users-service.ts';

/**
 * On user.invited: mints the person's set-password token and mails the link, built on the
 * tenant's primary host. Runs in the worker inside the event's tenant transaction, so a failing
 * mail server rolls the token back and the delivery is retried. Nobody who already has a
 * password is sent a link, and an invitation whose link the admin-invite command already
 * handed out is left alone (a second token would void the printed one).
 * The sign-in area mails it because it owns set-password tokens and links; the user module only
 * publishes user.invited. The person is read through usersService, never written.
 */
export const invitationMail: SubscriptionDefinition = {
  // The name it had under modules/user, kept: processed_events rows of past deliveries carry it.
  name: 'user-invitation-mail',
  event: 'user.invited',
  async handle(ctx, event, services) {
    if (event.payload.via === 'admin-invite') return;
    const id = String(event.payload.id ?? '');
    if (!isUuid(id)) return;
    // The person through the user module's service (its table); the tenant's name from the framework's.
    const person = await usersService.findById(ctx, id);
    if (person?.status !== 'invited') return;
    if ((await usersService.findByEmail(ctx, person.email))?.hasPassword !== false) return;
    const tenant = await ctx.db.selectFrom('tenants').select('name').where('id', '=', ctx.tenant.id).executeTakeFirst();
    if (!tenant) return;
    const raw = await mintSetPasswordToken(ctx, id, 'invitation');
    const link = await setPasswordLink(ctx, services, raw);
    await services.mailer.send({
      to: person.email,
      subject: `You are invited to ${tenant.name}`,
      text: invitationText({
        name: person.displayName ?? '',
        tenant: tenant.name,
        link,
        expiresAt: tokenExpiry(ctx.now, 'invitation'),
        purpose: 'invitation',
      }),
    });
  },
};

/**
 * The invitation's text. The link's end is said as an instant with its zone (framework/format.ts):
 * the mail is read wherever the person is, and a bare "7 days" counts from a sending they never saw.
 */
export function invitationText(input: {
  name: string;
  tenant: string;
  link: string;
  expiresAt: Date;
  purpose: SetPasswordPurpose;
}): string {
  const hours = TOKEN_LIFETIME_HOURS[input.purpose];
  const lasts = hours % 24 === 0 ? `${hours / 24} day${hours === 24 ? '' : 's'}` : `${hours} hours`;
  return [
    `Hello${input.name ? ` ${input.name}` : ''},`,
    '',
    `You have been invited to ${input.tenant}. Choose your password here to sign in:`,
    '',
    input.link,
    '',
    `The link works once, until ${formatDateTime(input.expiresAt)} (${lasts} from when it was sent). If you did not expect this invitation, ignore this message.`,
  ].join('\n');
}
