import Type from 'typebox';
import { defineRoute } from '../../framework/entity/define.ts';
import { clearSessionCookie, endSession, endSessions } from '../../framework/access/sessions.ts';
import { endCredentialsOf } from '../../framework/access/credentials.ts';
import { hashSecret, sessionCookie } from '../../framework/access/session-cookie.ts';
import { problem } from '../../framework/errors.ts';
import {
  assertPasswordPolicy,
  hashPassword,
  verifyPassword,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
} from '../user/passwords.ts';
import { redeemSetPasswordToken } from './set-password-tokens.ts';
import { THROTTLE, attemptsFrom, recordAttempt, takeSlot } from './throttle.ts';
import { tooManyAttempts } from './login.ts';
import { Email, NoContent, problemRef } from './schemas.ts';
import { usersService } from '../user/users-service.ts';
import './auth-tables.ts';
import { RESET_DONE_PATH } from './links.ts';

/** A browser form's own encoding (the JSON API is sent application/json). */
const isFormPost = (type: string | undefined): boolean =>
  (type ?? '').split(';', 1)[0]!.trim().toLowerCase() === 'application/x-www-form-urlencoded';

// The schema states the policy assertPasswordPolicy enforces, from the same constants; both count
// code points.
const NewPassword = Type.String({
  minLength: PASSWORD_MIN_LENGTH,
  maxLength: PASSWORD_MAX_LENGTH,
  description: `${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters`,
});

export const changePasswordRoute = defineRoute({
  method: 'POST',
  url: '/api/v1/auth/password',
  operationId: 'auth-password-change',
  summary: "Change the caller's password",
  description: [
    "Needs the password in force. Stores the new one, ends every other session of the person and keeps the caller's, and keeps the person's personal access tokens (a reset or an administrator's set-password ends them); publishes user.password_set.",
    'A wrong currentPassword is 422 VALIDATION_FAILED pointing at /body/currentPassword (the caller is signed in, so 401 would wrongly say otherwise); it counts as a failed sign-in of the client address, so the same 429 ErrTooManyAttempts applies.',
  ].join('\n\n'),
  tags: ['auth'],
  access: 'signedIn',
  // A personal access token is no session: it can neither change the password nor sign out.
  bearer: false,
  publishes: ['user.password_set'],
  schema: {
    body: Type.Object(
      { currentPassword: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }), newPassword: NewPassword },
      { additionalProperties: false },
    ),
    response: {
      204: NoContent,
      403: problemRef('AUTH_CROSS_SITE: posted from another site'),
      429: problemRef('ErrTooManyAttempts: too many failed password checks from this client address'),
    },
  },
  // No transaction around the handler: the password is verified and the new one hashed with none
  // open, so no pool connection waits on argon2 (a short one reads, another stores).
  transaction: 'none',
  async handler({ body, request, reply, services, session, transaction }) {
    assertPasswordPolicy(body.newPassword, '/body/newPassword');
    const caller = session!;
    const { throttled, inForce } = await transaction(async (tx) => ({
      throttled: (await attemptsFrom(tx, 'login', request.ip)) >= THROTTLE.login.max,
      inForce: (await usersService.lockCredentials(tx, caller.userId))?.passwordHash ?? null,
    }));
    if (throttled) throw tooManyAttempts(reply);
    if (!(await verifyPassword(services.passwordVerifier, inForce, body.currentPassword))) {
      // Nothing was written; the attempt is counted in a transaction of its own.
      await services.transactions.run(request.tenant!, (ctx) => recordAttempt(ctx, 'login', request.ip));
      throw notInForce();
    }
    const hash = await hashPassword(body.newPassword, services.passwordHasher);
    await transaction(async (tx) => {
      // Stored only over the hash just verified: a password set meanwhile (a reset, an administrator)
      // is the one in force now, which the caller did not give.
      const person = await usersService.lockCredentials(tx, caller.userId);
      if (!person || person.passwordHash !== inForce) throw notInForce();
      await usersService.setPasswordHash(tx, caller.userId, hash);
      await endSessions(tx, caller.userId, { keepSessionId: caller.id });
    });
    reply.code(204);
    return null;
  },
});

/** The refusal of a currentPassword that is not the one in force. */
function notInForce() {
  const message = 'does not match the password in force';
  return problem('VALIDATION_FAILED', `currentPassword ${message}`, {
    errors: [{ pointer: '/body/currentPassword', message }],
  });
}

export const FORGOT_ANSWER =
  'If the address belongs to an active account here, a link to set a new password is on its way.';

export const forgotPasswordRoute = defineRoute({
  method: 'POST',
  url: '/api/v1/auth/password/forgot',
  operationId: 'auth-password-forgot',
  summary: 'Ask for a password reset link',
  description: [
    'Publishes auth.reset_requested and does nothing else; the worker mails the link (only to an active user not sent one in the last 5 minutes). The answer and the work are the same whether or not the address exists.',
    `At most ${THROTTLE.forgot.max} requests per client address per ${THROTTLE.forgot.windowMinutes} minutes, then 429 RATE_LIMITED; the address asked about is never counted.`,
  ].join('\n\n'),
  tags: ['auth'],
  access: 'public',
  publishes: ['auth.reset_requested'],
  schema: {
    body: Type.Object({ email: Email }, { additionalProperties: false }),
    response: {
      202: Type.Object(
        { detail: Type.String() },
        { additionalProperties: false, description: 'Accepted, whether or not the address exists' },
      ),
      403: problemRef('AUTH_CROSS_SITE: posted from another site'),
      429: problemRef('RATE_LIMITED: too many requests from this client address'),
    },
  },
  async handler({ tx, body, request, reply }) {
    await takeSlot(tx, 'forgot', request.ip);
    const user = await usersService.findByEmail(tx, body.email);
    // The event carries the user id (or nothing), never the address.
    tx.publish('auth.reset_requested', { userId: user?.id ?? null });
    reply.code(202);
    return { detail: FORGOT_ANSWER };
  },
});

export const resetPasswordRoute = defineRoute({
  method: 'POST',
  url: '/api/v1/auth/password/reset',
  operationId: 'auth-password-reset',
  summary: 'Set a new password with the token from a mailed link',
  description: [
    "Redeems the set-password token (once), stores the new password, makes an invited user active, ends every session and every personal access token of the person, the caller's session included, and clears the cookie; publishes auth.password_reset and user.password_set.",
    'An unknown, spent or expired token is one 401 TOKEN_INVALID. A deactivated user is 409 INVALID_STATE and the token stays unspent.',
    `At most ${THROTTLE.reset.max} attempts per client address per ${THROTTLE.reset.windowMinutes} minutes, then 429 RATE_LIMITED.`,
    "Accepts JSON, or a form post from the /auth/reset page (application/x-www-form-urlencoded), which must also carry the page's CSRF token in the field csrf; a form post without it is 403 AUTH_CROSS_SITE.",
    'A JSON request is answered 204. A form post is answered 303 to /auth/reset?done=1, the page that says the password is set and links to the sign-in page (a browser without scripts would otherwise stay on the form).',
  ].join('\n\n'),
  tags: ['auth'],
  access: 'public',
  transaction: 'none',
  form: true,
  publishes: ['auth.password_reset', 'user.password_set'],
  schema: {
    body: Type.Object(
      { token: Type.String({ minLength: 1, maxLength: 200 }), password: NewPassword },
      { additionalProperties: false },
    ),
    response: {
      204: NoContent,
      303: Type.Null({
        description:
          'A form post: the password is set; Location is /auth/reset?done=1, which says so and links to the sign-in page',
      }),
      401: problemRef('TOKEN_INVALID: unknown, spent or expired token'),
      403: problemRef('AUTH_CROSS_SITE: posted from another site'),
      429: problemRef('RATE_LIMITED: too many attempts from this client address'),
    },
  },
  async handler({ body, request, reply, services }) {
    assertPasswordPolicy(body.password);
    const tenant = request.tenant!;
    // The attempt is counted in a transaction of its own, so a refused guess still counts.
    const holder = await services.transactions.run(tenant, async (ctx) => {
      await takeSlot(ctx, 'reset', request.ip);
      const token = await ctx.db
        .selectFrom('set_password_tokens')
        .select('user_id')
        .where('token_hash', '=', hashSecret(body.token))
        .executeTakeFirst();
      return token?.user_id ?? null;
    });
    const hash = await hashPassword(body.password, services.passwordHasher);
    const callerSession = request.cookies[sessionCookie(services.config).name];
    await services.transactions.run(
      tenant,
      async (ctx) => {
        const redeemed = await redeemSetPasswordToken(ctx, body.token);
        if (!redeemed)
          throw problem('TOKEN_INVALID', 'The link is unknown, already used or expired; ask for a new one');
        const person = await usersService.lock(ctx, redeemed.userId);
        if (!person) throw problem('TOKEN_INVALID', 'The link is unknown, already used or expired; ask for a new one');
        if (person.status === 'deactivated')
          throw problem('INVALID_STATE', 'This account is deactivated; its password cannot be set');
        // Every session and personal access token of the person: whoever took one before the reset loses it.
        await endCredentialsOf(ctx, redeemed.userId);
        // The caller's own session goes too, even when it belongs to somebody else on this browser.
        if (callerSession) await endSession(ctx, callerSession);
        ctx.publish('auth.password_reset', { userId: redeemed.userId });
        // Stores the hash, makes an invited user active and publishes user.password_set.
        await usersService.setPasswordHash(ctx, redeemed.userId, hash, { activate: true });
      },
      { actorId: holder },
    );
    clearSessionCookie(reply, services.config);
    // A form post (the reset page without scripts) goes on to the page that says it is done.
    if (isFormPost(request.headers['content-type'])) {
      reply.code(303).header('location', RESET_DONE_PATH);
      return null;
    }
    reply.code(204);
    return null;
  },
});
