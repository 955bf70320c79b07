import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { FORM_TOKEN_FIELD, issueFormToken } from '../access/form-token.ts';
import { safeNextPath } from '../access/next-path.ts';
import { apiRoute } from './api-route.ts';
import { adminContentSecurityPolicy } from './csp.ts';
import { registerAdminPage, type AdminSite } from './page.ts';
import { LOGIN_PATH, renderAnonymousPage } from './shell.ts';
import { HtmlPage } from './html.ts';
import { registerRoute } from '../http/register-route.ts';
import { typeboxValidatorCompiler } from '../http/validation.ts';

const LOGIN_OPERATION = 'auth-session-login';
const SSO_OPERATION = 'auth-oidc-start';

export interface LoginForm {
  /** Where the browser asked to go; kept only when it is a local path. */
  next?: string | undefined;
  /** One message for every refused sign-in (no account enumeration). */
  error?: string;
  /** The address as typed, so a failed attempt need not retype it (never the password). */
  email?: string;
  status?: number;
}

/** The one message of every refused sign-in (no account enumeration), as the login route words it for a form. */
const REFUSED = 'The address or the password is wrong.';

/**
 * The sign-in page (templates/admin/login.eta): a plain form that posts to POST /admin/login,
 * which runs the login route's own handler (CSRF token in the csrf field) and redirects to `next`,
 * or answers this page again with the refusal, so the address bar stays on /admin/login. With
 * single sign-on configured, a "Sign in with SSO" button starts it with the same `next`.
 * Shared by GET /admin/login and the login route's answer to a refused form post.
 */
export function renderLoginPage(
  request: FastifyRequest,
  reply: FastifyReply,
  services: Services,
  form: LoginForm,
): Promise<string> {
  const next = safeNextPath(form.next);
  const login = apiRoute(services, LOGIN_OPERATION);
  const sso = apiRoute(services, SSO_OPERATION);
  const csrf = () => issueFormToken(request, reply, services.config);
  // Also the login route's answer to a refused form post, outside the /admin scope: the same policy.
  reply
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header('content-security-policy', adminContentSecurityPolicy(request));
  return renderAnonymousPage(null, request, reply, csrf, {
    title: 'Sign in',
    template: './admin/login',
    ...(form.status ? { status: form.status } : {}),
    data: {
      action: login ? `${LOGIN_PATH}?next=${encodeURIComponent(next)}` : '',
      csrfField: FORM_TOKEN_FIELD,
      csrf: csrf(),
      email: form.email ?? '',
      error: form.error ?? '',
      sso: sso ? `${sso.url}?next=${encodeURIComponent(next)}` : '',
    },
  });
}

/**
 * GET /admin/login: public. POST /admin/login: the form's target, running the login route's
 * handler (`auth-session-login`, a no-transaction route) with its access, publish list and query
 * schema: signed in, 303 to `next`; refused, the page again with its one message (401, or 429 when
 * throttled), at the address the person typed it on, with or without JavaScript. A body outside the
 * route's schema (a password past its length) is refused with the same message, never an error page.
 */
export function registerLoginPage(site: AdminSite): void {
  registerLoginPost(site);
  registerAdminPage(site, {
    path: LOGIN_PATH,
    summary: 'Sign-in page',
    access: 'public',
    // Any next opens the page: one that is no local path or is too long lands on /admin (safeNextPath), as
    // docs/auth.md says; a signed-out browser is sent here with the address it asked, however long.
    schema: { querystring: Type.Object({ next: Type.Optional(Type.String()) }) },
    handler: (ctx) => renderLoginPage(ctx.request, ctx.reply, ctx.services, { next: ctx.query.next }),
  });
}

function registerLoginPost(site: AdminSite): void {
  const { services } = site;
  const login = apiRoute(services, LOGIN_OPERATION);
  if (login?.transaction !== 'none') return;
  const body = login.schema.body;
  const check = body
    ? typeboxValidatorCompiler({ schema: body, method: 'POST', url: LOGIN_PATH, httpPart: 'body' })
    : undefined;
  site.routes.set(`POST ${LOGIN_PATH}`, { access: 'public' });
  registerRoute(site.app, services, {
    method: 'POST',
    url: LOGIN_PATH.slice(site.app.prefix.length),
    operationId: 'admin-page-post-login',
    summary: 'Sign in: the sign-in page’s form',
    access: 'public',
    transaction: 'none',
    hidden: true,
    bearer: false,
    form: 'only',
    ...(login.publishes ? { publishes: login.publishes } : {}),
    schema: {
      ...(login.schema.querystring ? { querystring: login.schema.querystring } : {}),
      response: { 200: HtmlPage('The sign-in page'), 303: Type.Null({ description: 'Signed in: Location is next' }) },
    },
    handler: async (ctx) => {
      const posted = (typeof ctx.body === 'object' && ctx.body !== null ? ctx.body : {}) as Record<string, unknown>;
      const email = typeof posted.email === 'string' ? posted.email : '';
      const result = check ? (check(posted) as { error?: unknown; value?: unknown }) : { value: posted };
      if (result.error) {
        const query = ctx.query as { next?: string };
        return renderLoginPage(ctx.request, ctx.reply, services, {
          next: query.next,
          email,
          error: REFUSED,
          status: 401,
        });
      }
      return login.handler({ ...ctx, body: result.value ?? posted });
    },
  });
}
