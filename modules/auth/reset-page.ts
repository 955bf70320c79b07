import Type from 'typebox';
import { defineRoute } from '../../framework/entity/define.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../user/passwords.ts';
import { RESET_PAGE_PATH } from './links.ts';
import { renderPage } from './templates.ts';
import { HtmlPage } from './schemas.ts';
import { FORM_TOKEN_FIELD, issueFormToken, LOGIN_PATH } from '../../framework/admin/index.ts';

/**
 * The page a mailed set-password link opens: a form carrying the token from the query string and
 * a CSRF token, posting to the reset route (a declared form target). Served on every tenant host
 * like any other route.
 */
export const resetPageRoute = defineRoute({
  method: 'GET',
  url: RESET_PAGE_PATH,
  operationId: 'auth-page-reset',
  summary: 'Set-password page (HTML)',
  description:
    'The page the mailed link opens. Answers text/html: a form with the token from the query string that posts to POST /api/v1/auth/password/reset, and, for a browser without a session cookie, sets the CSRF cookie (app_csrf) that the token in the csrf field of the form is bound to.',
  tags: ['auth'],
  access: 'public',
  transaction: 'none',
  schema: {
    querystring: Type.Object({
      token: Type.Optional(Type.String({ maxLength: 200 })),
      done: Type.Optional(
        Type.Literal('1', {
          description:
            'Set by the reset route after a form post: the page says the password is set and links to the sign-in page.',
        }),
      ),
    }),
    response: { 200: HtmlPage('The set-password page') },
  },
  async handler({ query, request, reply, services }) {
    // The token is in this page's address: never send it on as a Referer, cache it, or let it be framed.
    // strict-origin sends no path or query anywhere, yet lets the form post carry the page's Origin:
    // under no-referrer a browser sends "Origin: null", which the cross-site rule refuses whenever
    // the browser sends no Sec-Fetch-Site (plain HTTP on a non-local name, older browsers).
    reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'strict-origin')
      .header('x-frame-options', 'DENY')
      .header(
        'content-security-policy',
        "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      );
    const done = query.done === '1';
    const token = done ? '' : (query.token ?? '');
    return renderPage('./auth/reset-page', {
      token,
      // The form's CSRF token (bound to the session cookie, else to app_csrf), only when there is a form.
      csrf: token ? issueFormToken(request, reply, services.config) : '',
      csrfField: FORM_TOKEN_FIELD,
      action: '/api/v1/auth/password/reset',
      done,
      signInPath: LOGIN_PATH,
      minLength: PASSWORD_MIN_LENGTH,
      maxLength: PASSWORD_MAX_LENGTH,
    });
  },
});
