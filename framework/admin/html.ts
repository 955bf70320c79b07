import Type, { type TSchema } from 'typebox';

/** A text/html answer (routes document it; fastify sends the string as it is). */
export const HtmlPage = (description: string): TSchema =>
  Type.Unsafe({ description, content: { 'text/html': { schema: { type: 'string' } } } });

/** True when htmx sent the request (it asks for part of a page). */
export const isHtmx = (headers: Record<string, string | string[] | undefined>): boolean =>
  headers['hx-request'] === 'true';

/** The product's name, in the header and every title. */
export const PRODUCT_NAME = 'Tenantry';
