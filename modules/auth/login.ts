import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import { defineRoute } from '../../framework/entity/define.ts';
import { endSession, openSession, setSessionCookie } from '../../framework/access/sessions.ts';
import { sessionCookie } from '../../framework/access/session-cookie.ts';
import { problem } from '../../framework/errors.ts';
import { verifyPassword, PASSWORD_MAX_LENGTH } from '../user/passwords.ts';
import { IdentitySchema, loadIdentity, type Identity } from './identity.ts';
import { SOFT_DELAY_MS, SOFT_DELAY_SOURCES, THROTTLE, accountKey, loginPressure, recordAttempt } from './throttle.ts';
import { Email, problemRef } from './schemas.ts';
import { usersService } from '../user/users-service.ts';
import { safeNextPath } from '../../framework/access/next-path.ts';
import { renderLoginPage } from '../../framework/admin/index.ts';
import { ProblemError } from '../../framework/errors.ts';
import type { Services } from '../../framework/entity/define.ts';
import './auth-tables.ts';

const credentials = () => problem('ErrCredentials', 'The address or the password is wrong');

export function tooManyAttempts(reply: FastifyReply) {
  const seconds = THROTTLE.login.windowMinutes * 60;
  reply.header('retry-after', String(seconds));
  return problem(
    'ErrTooManyAttempts',
    `Too many failed sign-ins from this address; try again within ${THROTTLE.login.windowMinutes} minutes`,
    {
      extensions: { retryAfterSeconds: seconds },
    },
  );
}

const SET_SESSION_COOKIE = {
  type: 'string',
  description:
    'The session cookie, with a fresh id: app_session=<id>; Path=/; HttpOnly; SameSite=Lax; Max-Age in seconds (30 days, sliding). On a public server.public_host it is __Host-app_session and also Secure. A non-browser client sends it back as Cookie: app_session=<id>.',
};

export const loginRoute = defineRoute({
  method: 'POST',
  url: '/api/v1/auth/login',
  operationId: 'auth-session-login',
  summary: 'Sign in with an address and a password',
  description: [
    'Answers the Identity and sets the session cookie (a fresh session id every time; a session the request already carried is ended).',
    'A wrong password, an unknown address, an invited user and a deactivated user all get the same 401 ErrCredentials at the same cost.',
    `After ${THROTTLE.login.max} failed sign-ins from one client address within ${THROTTLE.login.windowMinutes} minutes: 429 ErrTooManyAttempts.`,
    `An account whose failed sign-ins come from more than ${SOFT_DELAY_SOURCES} client addresses is answered ${SOFT_DELAY_MS / 1000} seconds later instead of being locked.`,
    'A post from another site (Sec-Fetch-Site or Origin) is refused with 403 AUTH_CROSS_SITE; clients that send neither header are not browsers and pass.',
    'Also a browser form target: the /admin/login page posts application/x-www-form-urlencoded (email, password and the page\'s CSRF token in the field csrf; without it 403 AUTH_CROSS_SITE). A form post is answered for a browser: signed in, 303 to the query parameter next when it is a local path (one leading "/", not "//" or "/\\", no control characters), percent-encoded as UTF-8 where it holds anything but URL characters (/é is sent as /%C3%A9), otherwise to /admin; refused, the sign-in page again (text/html, 401 or 429) with one message for every refusal. JSON posts are answered as above and ignore next.',
  ].join('\n\n'),
  tags: ['auth'],
  access: 'public',
  transaction: 'none',
  form: true,
  publishes: ['auth.logged_in', 'auth.login_failed'],
  schema: {
    querystring: Type.Object(
      {
        next: Type.Optional(
          Type.String({
            maxLength: 2000,
            description: 'A form post only: the local path to land on after signing in (default /admin).',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    body: Type.Object(
      { email: Email, password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX_LENGTH }) },
      { additionalProperties: false },
    ),
    response: {
      // @fastify/swagger turns a response schema's headers into the response's headers.
      200: { ...IdentitySchema, headers: { 'Set-Cookie': SET_SESSION_COOKIE } } as unknown as typeof IdentitySchema,
      303: Type.Null({ description: 'A form post that signed in: Location is next (a local path) or /admin' }),
      401: problemRef('ErrCredentials: wrong password, unknown address, invited or deactivated user'),
      403: problemRef('AUTH_CROSS_SITE: posted from another site'),
      429: problemRef('ErrTooManyAttempts: too many failed sign-ins from this client address'),
    },
  },
  async handler(context) {
    const { body, query, request, reply, services } = context;
    if (!isFormPost(request)) return signIn(context);
    // A browser's form: its answer is a page, never a problem document.
    try {
      await signIn(context);
    } catch (err) {
      if (!(err instanceof ProblemError) || (err.code !== 'ErrCredentials' && err.code !== 'ErrTooManyAttempts'))
        throw err;
      const error = err.code === 'ErrCredentials' ? 'The address or the password is wrong.' : err.message;
      return renderLoginPage(request, reply, services, {
        next: query.next,
        email: body.email,
        error,
        status: err.status,
      });
    }
    reply.code(303).header('location', safeNextPath(query.next));
    return null;
  },
});

const isFormPost = (request: FastifyRequest): boolean =>
  (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase() ===
  'application/x-www-form-urlencoded';

interface LoginContext {
  body: { email: string; password: string };
  request: FastifyRequest;
  reply: FastifyReply;
  services: Services;
}

/** Signs in: throttling, the password check, the session and its cookie. Answers the Identity. */
async function signIn({ body, request, reply, services }: LoginContext): Promise<Identity> {
  const tenant = request.tenant!;
  const source = request.ip;
  const account = accountKey(body.email);
  const { pressure, user } = await services.transactions.run(tenant, async (ctx) => ({
    pressure: await loginPressure(ctx, source, account),
    user: (await usersService.findCredentials(ctx, body.email)) ?? null,
  }));
  const userId = user?.id ?? null;
  if (pressure.failuresFromSource >= THROTTLE.login.max) throw tooManyAttempts(reply);
  // A distributed attack on one account slows that account down rather than locking its owner out.
  if (pressure.sourcesOnAccount > SOFT_DELAY_SOURCES) await sleep(SOFT_DELAY_MS);

  const cookieName = sessionCookie(services.config).name;
  const previous = request.cookies[cookieName];
  let opened: { rawId: string; identity: Identity };
  try {
    // Verified with no transaction open, so no pool connection waits on argon2; and even when there
    // is nothing to verify against, so every refusal costs the same.
    const matches = await verifyPassword(services.passwordVerifier, user?.passwordHash, body.password);
    if (!user || !matches || user.status !== 'active') throw credentials();
    opened = await services.transactions.run(
      tenant,
      async (ctx) => {
        // The session opens only on the hash that was verified, for a user still active: a password
        // changed or a user deactivated meanwhile refuses the sign-in (the row stays locked to the commit).
        const current = await usersService.lockCredentials(ctx, user.id);
        if (!current || current.passwordHash !== user.passwordHash || current.status !== 'active') throw credentials();
        if (previous) await endSession(ctx, previous);
        const rawId = await openSession(ctx, user.id, request);
        ctx.publish('auth.logged_in', { method: 'password', userId: user.id });
        const identity = await loadIdentity(ctx, user.id);
        if (!identity) throw credentials();
        return { rawId, identity };
      },
      { actorId: userId },
    );
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ErrCredentials') {
      services.metrics?.failedLogins.inc();
      // Nothing of the refused sign-in was kept; the failure is counted and published in a transaction of its own.
      await services.transactions.run(tenant, async (ctx) => {
        await recordAttempt(ctx, 'login', source, account);
        ctx.publish('auth.login_failed', { userId });
      });
    }
    throw err;
  }
  setSessionCookie(reply, services.config, opened.rawId);
  return opened.identity;
}
