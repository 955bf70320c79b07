import type { SubscriptionDefinition } from '../../framework/entity/define.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { notify } from '../notification/notify.ts';
import { mintSetPasswordToken, tokenExpiry, TOKEN_LIFETIME_HOURS } from './set-password-tokens.ts';
import { formatDateTime } from '../../framework/format.ts';
import { RESET_PAGE_PATH, setPasswordLink } from './links.ts';
import { renderMail } from './templates.ts';
import { usersService } from '../user/users-service.ts';
import './auth-tables.ts';

/** A person is sent at most one set-password link per this many minutes. */
export const RESET_REISSUE_MINUTES = 5;

/**
 * On auth.reset_requested: mails a set-password link to an active user who was not sent one in
 * the last five minutes, and leaves an in-app notification pointing at the reset page (without
 * the token). Runs in the worker inside the event's tenant transaction: a failing mail server
 * rolls the token back and the delivery is retried. The raw token lives only in the mail.
 */
export const resetLinkMail: SubscriptionDefinition = {
  name: 'auth-reset-link-mail',
  event: 'auth.reset_requested',
  publishes: ['notification.created'],
  async handle(ctx, event, services) {
    const userId = typeof event.payload.userId === 'string' ? event.payload.userId : '';
    if (!isUuid(userId)) return;
    // Serialises two deliveries for one person (two workers, two requests): the second then sees
    // the first one's token in its own statement below and sends nothing.
    const locked = await usersService.lock(ctx, userId);
    if (locked?.status !== 'active') return;
    const person = await usersService.findById(ctx, userId);
    const since = new Date(ctx.now.getTime() - RESET_REISSUE_MINUTES * 60_000);
    const site = await ctx.db
      .selectFrom('tenants')
      .select((eb) => [
        'name',
        eb
          .exists(
            eb
              .selectFrom('set_password_tokens')
              .select('id')
              .where('user_id', '=', userId)
              .where('sent_at', '>', since),
          )
          .$castTo<boolean>()
          .as('recentlySent'),
      ])
      .where('id', '=', ctx.tenant.id)
      .executeTakeFirst();
    if (!person || !site || site.recentlySent) return;
    const raw = await mintSetPasswordToken(ctx, userId, 'reset');
    const link = await setPasswordLink(ctx, services, raw);
    await services.mailer.send({
      to: person.email,
      subject: `Set a new password for ${site.name}`,
      text: renderMail('./auth/reset-mail', {
        name: person.displayName,
        tenant: site.name,
        hours: TOKEN_LIFETIME_HOURS.reset,
        // The instant with its zone (framework/format.ts): the mail is read wherever the person is.
        until: formatDateTime(tokenExpiry(ctx.now, 'reset')),
        link,
      }),
    });
    await notify(ctx, {
      recipientId: userId,
      title: 'Password reset requested',
      body: 'A link to set a new password was mailed to you. If you did not ask for it, you can ignore it.',
      link: RESET_PAGE_PATH,
      // The link itself was just mailed: the notice stays in the application.
      email: false,
    });
  },
};
