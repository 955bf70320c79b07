import multipart, { type MultipartFile } from '@fastify/multipart';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { NoTxRouteDefinition } from '../entity/define.ts';
import { registerRoute } from '../http/register-route.ts';
import { HtmlPage } from './html.ts';
import { FORM_TOKEN_FIELD, checkSentFormToken } from '../access/form-token.ts';
import type { Config } from '../config/schema.ts';
import type { AdminErrorRenderer, AdminSite } from './page.ts';

/** What the page hands the API route: its body, query and parameters, taken from the posted form. */
export interface EffectInput {
  body?: unknown;
  query?: unknown;
  params?: unknown;
}

/**
 * A form target that runs an API route declared `transaction: 'none'` (a command with `prepare`,
 * such as a subscribe that charges first; a streamed upload): the route's own handler, with its
 * access, publish list, body limit and multipart form, outside any page transaction, exactly as
 * the API runs it. Then the browser is sent on (303) to `next(answer)`. A refusal re-renders
 * through `onError` (or the shell's error page), like any admin page.
 */
export interface AdminEffectPageDefinition {
  /** The full path, starting /admin. */
  path: string;
  /** The API route the page runs. */
  route: NoTxRouteDefinition;
  /** One line, for logs. */
  summary: string;
  schema?: { params?: TSchema; querystring?: TSchema };
  /**
   * The route's input from the form as posted (the CSRF field checked and removed) and the page's
   * query and parameters. A multipart route streams the request itself: its query is the page's.
   */
  input?(posted: Record<string, unknown>, query: Record<string, unknown>, params: Record<string, string>): EffectInput;
  /** Where the browser goes once the route has answered (a local path). */
  next(answer: unknown): string;
  onError?: AdminErrorRenderer;
}

const operationIdOf = (path: string) =>
  `admin-page-post${path
    .replace(/^\/admin/, '')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/-$/, '')}`;

/**
 * Registers an effect page through the route wrapper (http/register-route.ts): the operator check,
 * the cross-site rule, the guard in a short transaction of its own, and for a form-encoded page the
 * CSRF form token. A multipart page (the route declares `multipart`) is parsed in a scope of its
 * own, as the API's are; its token is a field before the file part, checked when the route asks
 * for the file (tokenBeforeFile), so no byte of the file is taken before the token holds.
 */
export function registerAdminEffectPage(site: AdminSite, page: AdminEffectPageDefinition): void {
  const prefix = site.app.prefix;
  if (!page.path.startsWith(prefix)) throw new Error(`admin page ${page.path} lies outside ${prefix}`);
  const { route } = page;
  site.routes.set(`POST ${page.path}`, { access: route.access, ...(page.onError ? { onError: page.onError } : {}) });
  const definition: NoTxRouteDefinition = {
    method: 'POST',
    url: page.path.slice(prefix.length),
    operationId: operationIdOf(page.path),
    summary: page.summary,
    access: route.access,
    hidden: true,
    // Like every admin page: the session cookie only; a personal access token is no session.
    bearer: false,
    form: route.multipart === undefined ? 'only' : false,
    transaction: 'none',
    ...(route.multipart ? { multipart: route.multipart } : {}),
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    ...(route.publishes ? { publishes: route.publishes } : {}),
    schema: {
      ...(page.schema?.params ? { params: page.schema.params } : {}),
      ...(page.schema?.querystring ? { querystring: page.schema.querystring } : {}),
      response: { 200: HtmlPage(page.summary) },
    },
    handler: async (ctx) => {
      const posted = (typeof ctx.body === 'object' && ctx.body !== null ? ctx.body : {}) as Record<string, unknown>;
      const query = (ctx.query ?? {}) as Record<string, unknown>;
      const params = (ctx.params ?? {}) as Record<string, string>;
      const input = page.input ? page.input(posted, query, params) : {};
      const answer = await route.handler({
        ...ctx,
        ...(route.multipart ? { request: tokenBeforeFile(ctx.request, site.services.config) } : {}),
        body: input.body ?? null,
        query: input.query ?? (route.multipart ? query : {}),
        params: input.params ?? {},
      } as never);
      ctx.reply.code(303).header('location', page.next(answer)).type('text/html; charset=utf-8');
      return '';
    },
  };
  if (!route.multipart) {
    registerRoute(site.app, site.services, definition);
    return;
  }
  // Multipart parsing exists only around the routes that take it (as in http/web.ts).
  site.app.register(async (scope: FastifyInstance) => {
    await scope.register(multipart, { limits: { fileSize: Number.POSITIVE_INFINITY } });
    registerRoute(scope, site.services, definition);
  });
}

/**
 * The request as a multipart page hands it to its route: the same request, except that the file
 * it asks for (`request.file(options)`, or the first of `request.files(options)`, with the route's
 * own options) comes only after the form's token field, which precedes the file part as every
 * admin form carries it, has been checked (403 AUTH_CROSS_SITE, the file left unread). A form
 * without the field never reaches the route's work: the route asks for its file before it does anything.
 */
function tokenBeforeFile(request: FastifyRequest, config: Config): FastifyRequest {
  const checked = (part: MultipartFile | undefined): MultipartFile | undefined => {
    const field = part?.fields[FORM_TOKEN_FIELD];
    const sent = field && !Array.isArray(field) && field.type === 'field' ? field.value : undefined;
    try {
      checkSentFormToken(request, sent, config);
    } catch (err) {
      part?.file.resume();
      throw err;
    }
    return part;
  };
  const file = async (options?: Parameters<FastifyRequest['file']>[0]) => checked(await request.file(options));
  async function* files(options?: Parameters<FastifyRequest['files']>[0]): AsyncGenerator<MultipartFile> {
    let first = true;
    for await (const part of request.files(options)) {
      if (first) checked(part);
      first = false;
      yield part;
    }
  }
  return Object.create(request, { file: { value: file }, files: { value: files } }) as FastifyRequest;
}
