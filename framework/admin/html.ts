import type { FastifyReply, FastifyRequest } from 'fastify';
import Type, { type TSchema } from 'typebox';

/** A text/html answer (routes document it; fastify sends the string as it is). */
export const HtmlPage = (description: string): TSchema =>
  Type.Unsafe({ description, content: { 'text/html': { schema: { type: 'string' } } } });

/** True when htmx sent the request (it asks for part of a page). */
export const isHtmx = (headers: Record<string, string | string[] | undefined>): boolean =>
  headers['hx-request'] === 'true';

/**
 * A refusal answered as a whole page (the shell's error page, a page's own page again) to htmx's
 * request for part of one: htmx 4 swaps a 4xx answer as it swaps a 200 one, into the element that
 * asked, so a form, a row's Delete link or a list's rows would hold a second header, sidebar and
 * main. htmx is told to take the answer's body and put it in place of the page's
 * (HX-Retarget, HX-Reswap, HX-Reselect), as a navigation would show it; the address stays.
 */
export function refusedAsWholePage(request: FastifyRequest, reply: FastifyReply): void {
  if (reply.statusCode < 400 || !isHtmx(request.headers) || request.headers['hx-boosted'] === 'true') return;
  reply.header('hx-retarget', 'body').header('hx-reswap', 'innerHTML').header('hx-reselect', 'body');
}

/** The product's name, in the header and every title. */
export const PRODUCT_NAME = 'Tenantry';
