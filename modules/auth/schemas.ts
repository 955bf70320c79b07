import Type, { type TSchema } from 'typebox';
import { problemResponse } from '../../framework/openapi/problem-schema.ts';

/** A problem+json answer in a route's responses, with what it means there. */
export const problemRef = problemResponse;

/** An HTML page answer, documented as text/html rather than JSON. */
export const HtmlPage = (description: string): TSchema =>
  Type.Unsafe({ description, content: { 'text/html': { schema: { type: 'string' } } } });

export const NoContent = Type.Null({ description: 'No content' });

export const Email = Type.String({
  minLength: 1,
  maxLength: 320,
  description: 'The address the person signs in with; compared case-insensitively',
});
