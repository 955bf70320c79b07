import type { FastifyReply, FastifyRequest } from 'fastify';
import { toProblem } from '../http/problems.ts';
import { methodRefusal } from '../http/methods.ts';
import { type ProblemCode, type ProblemError, problem as makeProblem } from '../errors.ts';
import { asSentence } from './field-messages.ts';
import { hashSecret, sessionCookie } from '../access/session-cookie.ts';
import { issueFormToken } from '../access/form-token.ts';
import type { AdminSite } from './page.ts';
import { pageContext } from './page.ts';
import { LOGIN_PATH, renderAnonymousPage, renderAdminPage } from './shell.ts';
import { allows } from './allows.ts';
import { isHtmx } from './html.ts';

/** /admin/login?next=<the page asked for>: where an anonymous browser is sent. */
export function loginLocation(request: FastifyRequest): string {
  const wanted = request.method === 'GET' ? request.url : request.url.split('?', 1)[0]!;
  return `${LOGIN_PATH}?next=${encodeURIComponent(wanted)}`;
}

/** 303 to the login page; htmx (which would follow a redirect into a fragment) is told to navigate instead. */
export function sendToLogin(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const location = loginLocation(request);
  reply.header('cache-control', 'no-store');
  if (isHtmx(request.headers))
    return reply.code(200).header('hx-redirect', location).type('text/html; charset=utf-8').send('');
  return reply.code(303).header('location', location).send('');
}

/**
 * What a refusal says to a person in the shell, by its code: the API's problem documents keep the
 * codes and their developer wording; a page shows these sentences (the code rides along only in a
 * data-code attribute, for tests and support). A code not listed falls back to its status's.
 * `detail: true`: the problem's own message is written for people and is shown under the sentence.
 */
const SENTENCES: Partial<Readonly<Record<ProblemCode, { sentence: string; detail?: true }>>> = {
  NO_SITE: { sentence: 'No site is served at this address.' },
  NOT_FOUND: { sentence: 'This record does not exist, or it was deleted.' },
  ROUTE_NOT_FOUND: { sentence: 'There is no page at this address.' },
  MALFORMED_REQUEST: { sentence: 'The form could not be read. Reload the page and try again.' },
  FORBIDDEN: { sentence: 'You are not allowed to do this.' },
  METHOD_NOT_ALLOWED: { sentence: 'This page cannot be used that way. Go back and use its links and buttons.' },
  VALIDATION_FAILED: { sentence: 'Some values were not accepted.', detail: true },
  FIELD_COMMAND_OWNED: { sentence: 'One of the values can only be changed with its own button on the record’s page.' },
  FIELD_IMMUTABLE: { sentence: 'One of the values cannot be changed after the record was created.' },
  IDEMPOTENCY_KEY_REUSED: {
    sentence: 'This request was already sent with other values. Reload the page and try again.',
  },
  AUTH_REQUIRED: { sentence: 'Sign in to continue.' },
  AUTH_FORBIDDEN: { sentence: 'Your roles do not allow this. Ask an administrator for access.' },
  AUTH_NOT_OPERATOR: {
    sentence: 'This page belongs to the operator’s administration and opens only at the operator’s own address.',
  },
  AUTH_CROSS_SITE: {
    sentence: 'This form has expired or was sent from another site. Reload the page and send it again.',
  },
  USE_PASSWORD_CHANGE: {
    sentence:
      'You cannot set your own password here. Your own password is changed by giving the current one, or ask another administrator to set it.',
  },
  ErrCredentials: { sentence: 'The address or the password is wrong.' },
  ErrTooManyAttempts: { sentence: 'Too many failed sign-ins. Wait a few minutes and try again.' },
  TOKEN_INVALID: { sentence: 'This link is invalid or has expired. Ask for a new one.' },
  RATE_LIMITED: { sentence: 'Too many requests. Wait a moment and try again.' },
  CONFLICT: { sentence: 'Someone else changed this at the same time. Reload the page and try again.' },
  ALREADY_EXISTS: { sentence: 'A record with this value already exists. Choose another value.' },
  INVALID_STATE: { sentence: 'This is not possible in the record’s current state.', detail: true },
  INVALID_TRANSITION: { sentence: 'This step is not possible from the record’s current status.', detail: true },
  SLUG_INVALID: { sentence: 'Use lowercase letters, digits and single hyphens, like about-us.' },
  SLUG_TAKEN: { sentence: 'Another item already uses this address. Choose another one.' },
  PLAN_IN_USE: {
    sentence: 'This plan is still in use by a subscription, so it cannot be deleted. Make it inactive instead.',
  },
  LAST_ADMINISTRATOR: {
    sentence: 'This is the last administrator of the tenant. Give someone else the admin role first.',
  },
  LIMIT_REACHED: { sentence: 'There are as many of these as this tenant may have. Delete one first.' },
  PERIOD_OWED: { sentence: 'A payment for the current period is still owed. Settle it first.' },
  PAYMENT_DECLINED: { sentence: 'The payment was declined.' },
  PERMISSION_UNKNOWN: { sentence: 'One of the permissions does not exist.', detail: true },
  PERMISSION_OPERATOR_ONLY: { sentence: 'Only the operator’s own roles may hold operator permissions.', detail: true },
  ROLE_UNKNOWN: { sentence: 'One of the roles does not exist. Create it on the Roles page first.', detail: true },
  PAYLOAD_TOO_LARGE: { sentence: 'What was sent is too large.' },
  FILE_TOO_LARGE: { sentence: 'The file is larger than the upload limit.' },
  QUOTA_EXCEEDED: { sentence: 'The file does not fit in the storage left to this tenant.' },
  FILE_MISSING: { sentence: 'Choose a file to upload.' },
  MEDIA_TYPE_INVALID: { sentence: 'The file’s type is not one the service accepts.' },
  MEDIA_TYPE_MISMATCH: { sentence: 'The file’s contents do not match its type.' },
  UNSUPPORTED_MEDIA_TYPE: { sentence: 'The form could not be read. Reload the page and try again.' },
  OIDC_STATE_INVALID: { sentence: 'The single sign-on took too long or was interrupted. Start it again.' },
  OIDC_REFUSED: { sentence: 'The identity provider did not sign you in.' },
  OIDC_ISSUER_UNAVAILABLE: { sentence: 'The identity provider cannot be reached. Try again later.' },
  NOT_READY: { sentence: 'The service is starting or unavailable. Try again in a moment.' },
  BLOB_MISSING: { sentence: 'The file’s contents cannot be read right now. Try again later.' },
  STORAGE_UNAVAILABLE: { sentence: 'File storage cannot be reached right now. Try again later.' },
  STORAGE_FULL: { sentence: 'File storage is full. Tell the operator.' },
  DB_BUSY: { sentence: 'The service is busy. Try again in a moment.' },
  DB_TIMEOUT: { sentence: 'This took too long. Try again in a moment.' },
  DB_UNAVAILABLE: { sentence: 'The database cannot be reached. Try again in a moment.' },
  INTERNAL: { sentence: 'Something went wrong on our side. It has been logged; try again in a moment.' },
};

const BY_STATUS: Readonly<Record<number, string>> = {
  400: 'The form could not be read. Reload the page and try again.',
  401: 'Sign in to continue.',
  403: 'You are not allowed to do this.',
  404: 'There is nothing here.',
  409: 'This is not possible in the record’s current state.',
  413: 'What was sent is too large.',
  422: 'Some values were not accepted.',
  429: 'Too many requests. Wait a moment and try again.',
};

/** A refusal as the shell says it: a sentence, and the problem's own message when that is written for people. */
export function problemText(p: ProblemError): { sentence: string; detail?: string } {
  const known = SENTENCES[p.code];
  const sentence =
    known?.sentence ?? BY_STATUS[p.status] ?? (p.status >= 500 ? SENTENCES.INTERNAL!.sentence : 'This was refused.');
  const detail = known?.detail && !p.errors?.length ? asSentence(p.message) : undefined;
  return detail && detail !== sentence ? { sentence, detail } : { sentence };
}

/** The heading of an error page, by status. */
export const errorHeading = (status: number): string =>
  status === 404
    ? 'Not found'
    : status === 403
      ? 'Not allowed'
      : status === 409
        ? 'Not possible now'
        : status < 500
          ? 'Not accepted'
          : 'Something went wrong';

/** The shell's error page for a refusal (a page's own code may render it too, e.g. a 404 it finds itself). */
export const errorView = (p: ProblemError) => {
  const text = problemText(p);
  return {
    title: errorHeading(p.status),
    template: './admin/error',
    data: {
      heading: errorHeading(p.status),
      code: p.code,
      sentence: text.sentence,
      items: text.detail ? [text.detail] : [],
    },
    status: p.status,
  };
};

/**
 * The /admin scope answers in HTML. A request with no valid session (AUTH_REQUIRED) is sent to
 * the login page. Any other refusal is a page with its status: the caller's shell (sidebar, badge)
 * is rendered in a fresh transaction, the failed one having rolled back; a page that declared
 * `onError` (a form) renders itself again with the problem, after the route's access is checked
 * again in that transaction. Server errors get a plain page and no second transaction.
 */
export function installAdminErrors(site: AdminSite): void {
  const { services } = site;
  const cookieName = sessionCookie(services.config).name;

  const answer = async (request: FastifyRequest, reply: FastifyReply, problem: ProblemError) => {
    if (problem.code === 'AUTH_REQUIRED') return sendToLogin(request, reply);
    reply.header('cache-control', 'no-store');
    const csrf = () => issueFormToken(request, reply, services.config);
    const tenant = request.tenant;
    const rawId = request.cookies[cookieName];
    if (problem.status >= 500 || !tenant || !rawId) {
      return reply.send(await renderAnonymousPage(site, request, reply, csrf, errorView(problem)));
    }
    const key = `${request.method} ${request.routeOptions.url ?? ''}`;
    const page = site.routes.get(key);
    const renderer = page?.onError;
    const access = page?.access;
    const html = await services.transactions.run(
      tenant,
      async (tx) => {
        if (!tx.session) return null;
        const ctx = pageContext(site, {
          tx,
          request,
          reply,
          services,
          params: request.params,
          query: request.query,
          body: request.body,
        });
        reply.code(problem.status);
        const own =
          renderer && access && allows(access, tx.session, tenant, services.registry)
            ? await renderer(ctx, problem)
            : null;
        return own ?? renderAdminPage(site, ctx, errorView(problem));
      },
      { sessionHash: hashSecret(rawId) },
    );
    if (html === null) return sendToLogin(request, reply);
    return reply.send(html);
  };

  /** The last resort, when even the error page could not be rendered: a page that needs nothing. */
  const plainErrorPage = (request: FastifyRequest, reply: FastifyReply, renderErr: unknown) => {
    const fallback = toProblem(renderErr);
    if (fallback.status >= 500) request.log.error({ err: renderErr }, 'admin error page failed');
    return reply
      .code(fallback.status)
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><html lang="en"><title>Error</title><p data-code="${fallback.code}">${problemText(fallback).sentence}</p></html>`,
      );
  };

  site.app.setErrorHandler(async (err, request, reply) => {
    const problem = toProblem(err);
    if (problem.status >= 500) request.log.error({ err }, 'admin request failed');
    try {
      return await answer(request, reply, problem);
    } catch (renderErr) {
      // The page shown again for a client's refusal may meet another client refusal: a form posted
      // for a row that is not there reads that row (404). That refusal is the answer, on the shell's
      // page for it; a client's 4xx is never an error in the log. Only a server failure is.
      const refusal = toProblem(renderErr);
      if (refusal.status < 500 && refusal.code !== problem.code) {
        try {
          return await answer(request, reply, refusal);
        } catch (again) {
          return plainErrorPage(request, reply, again);
        }
      }
      return plainErrorPage(request, reply, renderErr);
    }
  });

  // Any other /admin path: the anonymous browser signs in first; a signed-in one sees a 404 page.
  // A page asked with a method it does not declare is a 405 page with Allow, signed in or not.
  site.app.setNotFoundHandler(async (request, reply) => {
    const refused = methodRefusal(request, (allow) => reply.header('allow', allow));
    if (refused) return answer(request, reply, refused);
    if (!request.cookies[cookieName]) return sendToLogin(request, reply);
    return answer(request, reply, makeProblem('ROUTE_NOT_FOUND', `No page at ${request.url.split('?', 1)[0]}`));
  });
}
