import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';

/**
 * TypeBox validation for every route: bodies are checked as sent (unknown properties refused,
 * nothing silently dropped), while params and query strings are converted from text and get
 * their defaults.
 */
export const typeboxValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  return (value: unknown) => {
    const prepared = httpPart === 'body' ? value : Value.Default(schema, Value.Convert(schema, value));
    if (check.Check(prepared)) return { value: prepared };
    return { error: [...check.Errors(prepared)] as never };
  };
};
