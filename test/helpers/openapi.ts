import SwaggerParser from '@apidevtools/swagger-parser';

/**
 * The served OpenAPI document with its $refs resolved (a copy): bodies and answers are named
 * schemas under components.schemas, and a test that reads a shape reads through the $ref.
 */
export async function dereferenced<T>(document: T): Promise<T> {
  return (await SwaggerParser.dereference(structuredClone(document) as never)) as T;
}
