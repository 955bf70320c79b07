import Type from 'typebox';
import {
  errorView,
  registerAdminPage,
  renderTemplate,
  runApiRoute,
  type AdminPageContext,
  type AdminSite,
  FORM_TOKEN_FIELD,
} from '../../framework/admin/index.ts';
import type { AnyRoute, RouteDefinition } from '../../framework/entity/define.ts';
import { problem, type ProblemError } from '../../framework/errors.ts';
import { validationProblem } from '../../framework/http/problems.ts';
import { typeboxValidatorCompiler } from '../../framework/http/validation.ts';
import { CORS_ORIGINS_MAX, parseOriginList } from '../../framework/http/origins.ts';
import { CORS_MANAGE, listCorsOriginsRoute, putCorsOriginsRoute } from './cors-origins.routes.ts';

export const CORS_ORIGINS_PAGE = '/admin/auth/cors-origins';
const access = { permission: CORS_MANAGE };
const SavedQuery = Type.Object({ saved: Type.Optional(Type.String({ maxLength: 1 })) });
const ORIGIN_RULE =
  'Write an origin as the browser shows it: http:// or https://, the host, and a port if it has one, e.g. https://app.example.com or http://localhost:5173 — no path, and never *.';

interface OriginsForm {
  /** The text area as posted: one origin a line. */
  text: string;
  error?: string;
}

/** The lines of the text area that say something: one origin each (a comma also separates, as in the configuration). */
const entriesOf = (text: string): string[] =>
  text
    .split(/[\n,]/)
    .map((line) => line.trim())
    .filter((line) => line !== '');

/**
 * The "Web origins" page of the admin shell: the tenant's administrator (cors:manage, as the API)
 * lists the origins whose pages may call the tenant's API with a personal access token. The form
 * is the whole list, one origin a line; saving runs PUT /api/v1/auth/cors-origins's own handler
 * (runApiRoute) after checking the list against the route's body schema, so the same rules store
 * the same list (lower-case, no default port, deduplicated, sorted). A refusal comes back as the
 * form as posted, with a sentence naming the line at fault; the problem's code is never shown.
 * The installation's own origins (server.cors_origins, read at boot) are shown beside, read-only.
 */
export function registerCorsOriginPages(site: AdminSite): void {
  const read = inTransaction(listCorsOriginsRoute);
  const put = inTransaction(putCorsOriginsRoute);
  const installed = parseOriginList(site.services.config.server.cors_origins);
  const installationOrigins = 'origins' in installed ? installed.origins : [];
  const checkBody = typeboxValidatorCompiler({
    schema: putCorsOriginsRoute.schema!.body!,
    method: 'PUT',
    url: putCorsOriginsRoute.url,
    httpPart: 'body',
  });

  registerAdminPage(site, {
    path: CORS_ORIGINS_PAGE,
    access,
    summary: 'Web origins',
    schema: { querystring: SavedQuery },
    handler: async (page) => {
      const origins = await stored(page);
      return renderPage(page, origins, { text: origins.join('\n') }, { saved: page.query.saved === '1' });
    },
  });

  registerAdminPage(site, {
    method: 'POST',
    path: CORS_ORIGINS_PAGE,
    access,
    summary: 'Set the web origins',
    publishes: putCorsOriginsRoute.publishes ?? [],
    handler: async (page) => {
      // The form always sends its text area (empty to allow none); without it, or with it twice, the
      // post is no form of this page, and reading it as an empty list would remove every origin.
      if (typeof page.body.origins !== 'string')
        throw problem('MALFORMED_REQUEST', 'The form carries the origins text area once');
      const body = { origins: entriesOf(postedText(page.body)) };
      const checked = checkBody(body) as { error?: never[] };
      if (checked.error) throw validationProblem(checked.error, 'body');
      await runApiRoute(put, page, { body });
      return page.redirect(`${CORS_ORIGINS_PAGE}?saved=1`);
    },
    onError: async (page, refused) => {
      if (refused.status !== 422) return page.render(errorView(refused));
      const text = postedText(page.body);
      return renderPage(
        page,
        await stored(page),
        { text, error: sentenceFor(refused, entriesOf(text)) },
        { status: 422 },
      );
    },
  });

  const stored = async (page: AdminPageContext): Promise<string[]> =>
    ((await runApiRoute(read, page)) as { origins: string[] }).origins;

  function renderPage(
    page: AdminPageContext,
    origins: readonly string[],
    form: OriginsForm,
    state: { saved?: boolean; status?: number },
  ): Promise<string> {
    const body = renderTemplate('./admin/pages/cors-origins', {
      origins,
      installationOrigins,
      form: { ...form, max: CORS_ORIGINS_MAX },
      saved: state.saved === true,
      action: CORS_ORIGINS_PAGE,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({ title: 'Web origins', body, ...(state.status ? { status: state.status } : {}) });
  }
}

/** The page runs the route's handler in its own transaction: a route without one could not be run so. */
function inTransaction(route: AnyRoute): RouteDefinition {
  if (route.transaction === 'none')
    throw new Error(`the web origins page needs ${route.operationId} run in a transaction`);
  return route;
}

const postedText = (body: Record<string, unknown>): string => (typeof body.origins === 'string' ? body.origins : '');

/** The refusal in words: the line it points at (/body/origins/<i>), or the list as a whole. */
function sentenceFor(refused: ProblemError, entries: readonly string[]): string {
  const pointer = refused.errors?.[0]?.pointer ?? '';
  const at = /^\/body\/origins\/(\d+)$/.exec(pointer);
  if (at) {
    const entry = entries[Number(at[1])] ?? '';
    return `“${entry.length > 80 ? `${entry.slice(0, 79)}…` : entry}” is not an origin. ${ORIGIN_RULE}`;
  }
  if (entries.length > CORS_ORIGINS_MAX)
    return `List at most ${CORS_ORIGINS_MAX} origins; this list has ${entries.length}.`;
  return `The list could not be saved. ${ORIGIN_RULE}`;
}
