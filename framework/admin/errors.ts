import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { SECURITY_HEADERS, frameworkProblem, retryAfter, toProblem } from '../http/problems.ts';
import { methodRefusal } from '../http/methods.ts';
import { type ProblemError, problem as makeProblem, problemDeclaration } from '../errors.ts';
import { asSentence } from './field-messages.ts';
import { hashSecret, sessionCookie } from '../access/session-cookie.ts';
import { issueFormToken } from '../access/form-token.ts';
import type { AdminSite } from './page.ts';
import { pageContext } from './page.ts';
import { LOGIN_PATH, renderAnonymousPage, renderAdminPage } from './shell.ts';
import { allows } from './allows.ts';
import { isHtmx, refusedAsWholePage } from './html.ts';
import { setShellHeaders } from './csp.ts';

/**
 * /admin/login?next=<the page asked for>: where an anonymous browser is sent. htmx asks for part of
 * a page (a list's rows, a picker's options, a form's post): next is then the page the browser
 * shows (HX-Current-URL, its path and query), so that signing in comes back to a whole page, not
 * to a bare fragment.
 */
export function loginLocation(request: FastifyRequest): string {
  const wanted = shownPage(request) ?? (request.method === 'GET' ? request.url : request.url.split('?', 1)[0]!);
  return `${LOGIN_PATH}?next=${encodeURIComponent(wanted)}`;
}

function shownPage(request: FastifyRequest): string | undefined {
  const current = request.headers['hx-current-url'];
  if (!isHtmx(request.headers) || typeof current !== 'string' || !URL.canParse(current)) return undefined;
  const url = new URL(current);
  const path = `${url.pathname}${url.search}`;
  return isAdminAddress(path) ? path : undefined;
}

/** 303 to the login page; htmx (which would follow a redirect into a fragment) is told to navigate instead. */
export function sendToLogin(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const location = loginLocation(request);
  reply.header('cache-control', 'no-store');
  if (isHtmx(request.headers))
    return reply.code(200).header('hx-redirect', location).type('text/html; charset=utf-8').send('');
  return reply.code(303).header('location', location).send('');
}

/** What the shell says of a refusal whose code declares no sentence, by its status. */
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

/**
 * A refusal as the shell says it to a person: the sentence its code's owner declared with it
 * (ProblemDeclaration.sentence: the framework's in errors.ts, a module's in its `problems`), else
 * the sentence of its status. The API's problem documents keep the codes and their developer
 * wording; a page shows these sentences (the code rides along only in a data-code attribute, for
 * tests and support). When the declaration says its message is written for people (`detail`), the
 * problem's own message is shown under the sentence.
 */
export function problemText(p: ProblemError): { sentence: string; detail?: string } {
  const known = problemDeclaration(p.code);
  const sentence =
    known?.sentence ??
    BY_STATUS[p.status] ??
    (p.status >= 500 ? problemDeclaration('INTERNAL')!.sentence! : 'This was refused.');
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
    // A refusal that says when to try again says it as the API's does (a page's live stream past its limits).
    const seconds = retryAfter(problem);
    if (seconds !== undefined) reply.header('retry-after', String(seconds));
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
    reply.code(fallback.status);
    refusedAsWholePage(request, reply);
    return reply.type('text/html; charset=utf-8').send(plainErrorHtml(fallback.code, problemText(fallback).sentence));
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

/** A page that needs nothing (no tenant, no session, no template): the shell's own sentence, the code only in data-code. */
const plainErrorHtml = (code: string, sentence: string) =>
  `<!doctype html><html lang="en"><title>Error</title><p data-code="${code}">${sentence}</p>` +
  '<p><a href="/admin">Back to the dashboard</a></p></html>';

/** An address under /admin, where a person reads the answer: the shell's prefix and what is below it. */
export const isAdminAddress = (url: string): boolean => /^\/admin(?:[/?#]|$)/.test(url);

/**
 * A failure fastify meets before routing (an address that is no valid percent-encoding, a path
 * segment past the router's limit) at an address under /admin: no scope, hook or tenant has run,
 * so the shell's error handler never sees it. A browser shown the API's problem document there
 * read its code; it gets the plain page instead, with the shell's headers, the code in data-code.
 */
export function adminFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const refused = frameworkProblem(err);
  if (refused.status >= 500) request.log.error({ err }, 'admin request failed before routing');
  const sentence =
    refused.status >= 500
      ? problemText(refused).sentence
      : 'This address cannot be read. Check the link, or start again from the dashboard.';
  return setShellHeaders(request, reply.headers(SECURITY_HEADERS))
    .header('cache-control', 'no-store')
    .header('x-request-id', request.id)
    .code(refused.status)
    .type('text/html; charset=utf-8')
    .send(plainErrorHtml(refused.code, sentence));
}
