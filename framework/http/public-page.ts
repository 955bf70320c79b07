import Type from 'typebox';
import type { EntityRow, NoTxRouteDefinition } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { TProperties } from 'typebox';
import { notModified, weakETag } from './etag.ts';
import { pageRendererFor } from './page-templates.ts';
import { publicEarlyAnswer, publicLookup, PUBLIC_READ_VERB } from './public-read.ts';
import { toProblem } from './problems.ts';
import { HtmlPage } from '../admin/html.ts';

/** The shipped (and overridable) page for a value no public page answers to. */
export const PUBLIC_NOT_FOUND_TEMPLATE = 'public/not-found';

/**
 * The public pages' policy: no script at all, the template's own inline style, images from any
 * http(s) address (a page's Markdown may show them; the sanitiser lets no other scheme through),
 * no form, no framing, no <base>.
 */
export const PUBLIC_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src http: https:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

/**
 * The HTML page of an entity's public read (PublicReadDefinition.page), e.g. GET /p/<slug> for
 * contents: the same lookup, the same weak ETag (so the validator cache answers its 304 too, at the
 * front door) and the same Cache-Control as the JSON read; the public shape rendered into the page
 * template. Where the JSON read answers 404 or 422 (an unknown, unpublished or deleted value, one
 * outside the field's grammar) a browser gets the plain not-found page, 404. Not an API route: it
 * is hidden from OpenAPI.
 */
export function publicPageRoute(
  entity: ResolvedEntity,
  toRow: (values: Record<string, unknown>) => EntityRow<TProperties>,
): NoTxRouteDefinition | undefined {
  const lookup = publicLookup(entity, toRow);
  const page = lookup?.spec.page;
  if (!lookup || !page) return undefined;
  const { spec } = lookup;
  const { names } = entity;
  return {
    method: 'GET',
    url: `${page.path}/:${spec.by}`,
    operationId: names.operationId(`${PUBLIC_READ_VERB}-page`),
    summary: `The public ${names.label.toLowerCase()} as an HTML page`,
    tags: [entity.module],
    access: 'public',
    hidden: true,
    hidesNoSite: true,
    transaction: 'none',
    replica: 'always',
    schema: {
      params: Type.Object({ [spec.by]: Type.String({ maxLength: 100 }) }),
      response: { 200: HtmlPage(`The public ${names.label.toLowerCase()}`) },
    },
    earlyAnswer: publicEarlyAnswer(entity, lookup),
    handler: async ({ params, request, reply, services, transaction }) => {
      const render = pageRendererFor(services.config);
      reply
        .type('text/html; charset=utf-8')
        .header('content-security-policy', PUBLIC_PAGE_CSP)
        .header('referrer-policy', 'strict-origin-when-cross-origin');
      const notFoundPage = () => {
        reply.code(404).header('cache-control', 'no-store');
        return render(PUBLIC_NOT_FOUND_TEMPLATE, {});
      };
      let value: string;
      try {
        value = lookup.normalise(String((params as Record<string, unknown>)[spec.by]));
      } catch (err) {
        if (toProblem(err).status === 422) return notFoundPage();
        throw err;
      }
      const cache = services.publicReads;
      const generation = cache.current();
      return transaction(async (tx) => {
        const row = await lookup.find(tx, value);
        if (!row) return notFoundPage();
        const etag = weakETag(lookup.etagOf(row));
        // As the JSON read: a replica's row may be older than an eviction already heard.
        if (!tx.replica) cache.fill(names.table, request.tenant!.id, value, etag, generation);
        if (spec.cacheControl) reply.header('cache-control', spec.cacheControl);
        if (notModified(request, reply, etag)) return undefined;
        return render(page.template, { page: await spec.shape(row, tx) });
      });
    },
  };
}
