import { sql } from 'kysely';
import type { SubscriptionDefinition } from '../../framework/entity/define.ts';
import { isUuid } from '../../framework/operations/entity-ops.ts';
import { notify } from '../notification/notify.ts';
import { mintSetPasswordToken, TOKEN_LIFETIME_HOURS } from './set-password-tokens.ts';
import { RESET_PAGE_PATH, setPasswordLink } from './links.ts';
import { renderMail } from './templates.ts';

/** A person is sent at most one set-password link per this many minutes. */
export const RESET_REISSUE_MINUTES = 5;

interface Recipient {
  email: string;
  display_name: string;
  tenant_name: string;
  recently_sent: boolean;
}

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
    await sql`select 1 from users where id = ${userId} for update`.execute(ctx.db);
    const { rows } = await sql<Recipient>`
      select u.email, u.display_name, t.name as tenant_name,
             exists (select 1 from set_password_tokens s
                      where s.user_id = u.id and s.sent_at > ${ctx.now}::timestamptz - make_interval(mins => ${RESET_REISSUE_MINUTES})) as recently_sent
        from users u join tenants t on t.id = u.tenant_id
       where u.id = ${userId} and u.status = 'active' and u.deleted_at is null`.execute(ctx.db);
    const recipient = rows[0];
    if (!recipient || recipient.recently_sent) return;
    const raw = await mintSetPasswordToken(ctx, userId, 'reset');
    const link = await setPasswordLink(ctx, services, raw);
    await services.mailer.send({
      to: recipient.email,
      subject: `Set a new password for ${recipient.tenant_name}`,
      text: renderMail('./auth/reset-mail', {
        name: recipient.display_name,
        tenant: recipient.tenant_name,
        hours: TOKEN_LIFETIME_HOURS.reset,
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
