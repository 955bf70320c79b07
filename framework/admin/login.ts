import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { FORM_TOKEN_FIELD, issueFormToken } from '../access/form-token.ts';
import { safeNextPath } from '../access/next-path.ts';
import { apiRoute } from './api-route.ts';
import { adminContentSecurityPolicy } from './csp.ts';
import { registerAdminPage, type AdminSite } from './page.ts';
import { LOGIN_PATH, renderAnonymousPage } from './shell.ts';

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

/**
 * The sign-in page (templates/admin/login.eta): a plain form that posts to the login route,
 * which accepts it as a form post (CSRF token in the csrf field) and redirects to `next`. With
 * single sign-on configured, a "Sign in with SSO" button starts it with the same `next`.
 * Shared by GET /admin/login and the login route's answer to a refused form post.
 */
export function renderLoginPage(request: FastifyRequest, reply: FastifyReply, services: Services, form: LoginForm): Promise<string> {
  const next = safeNextPath(form.next);
  const login = apiRoute(services.registry, LOGIN_OPERATION);
  const sso = apiRoute(services.registry, SSO_OPERATION);
  const csrf = () => issueFormToken(request, reply, services.config);
  // Also the login route's answer to a refused form post, outside the /admin scope: the same policy.
  reply.header('cache-control', 'no-store').header('x-frame-options', 'DENY').header('content-security-policy', adminContentSecurityPolicy(request));
  return renderAnonymousPage(null, request, reply, csrf, {
    title: 'Sign in',
    template: './admin/login',
    ...(form.status ? { status: form.status } : {}),
    data: {
      action: login ? `${login.url}?next=${encodeURIComponent(next)}` : '',
      csrfField: FORM_TOKEN_FIELD,
      csrf: csrf(),
      email: form.email ?? '',
      error: form.error ?? '',
      sso: sso ? `${sso.url}?next=${encodeURIComponent(next)}` : '',
    },
  });
}

/** GET /admin/login: public. */
export function registerLoginPage(site: AdminSite): void {
  registerAdminPage(site, {
    path: LOGIN_PATH,
    summary: 'Sign-in page',
    access: 'public',
    schema: { querystring: Type.Object({ next: Type.Optional(Type.String({ maxLength: 2000 })) }) },
    handler: (ctx) => renderLoginPage(ctx.request, ctx.reply, ctx.services, { next: ctx.query.next as string | undefined }),
  });
}
