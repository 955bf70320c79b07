import Type from 'typebox';
import { typeboxValidatorCompiler } from './validation.ts';
import { validationProblem, type ValidationIssue } from './problems.ts';

/** The body of an API write that declares none: no property at all. */
const NO_BODY = Type.Object({}, { additionalProperties: false });
const noBody = typeboxValidatorCompiler({ schema: NO_BODY, method: 'POST', url: '', httpPart: 'body' });

/**
 * An API write that declares no body (a command such as publish, a DELETE) takes none: a body
 * naming a property, or one that is no object, is 422 VALIDATION_FAILED, as the property a declared
 * schema does not name is (docs/api-conventions.md), never silently dropped. No body, `null` and
 * `{}` say nothing and pass. The document is left as declared: such a route shows no request body.
 */
export function refuseUndeclaredBody(body: unknown): void {
  if (body === undefined || body === null) return;
  const result = noBody(body) as { error?: ValidationIssue[] };
  if (result.error) throw validationProblem(result.error, 'body');
}
