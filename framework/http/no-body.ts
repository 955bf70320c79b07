import type { AnyRoute } from '../entity/define.ts';
import { API_PREFIX } from '../entity/names.ts';
import { STATE_CHANGING_METHODS } from '../access/cross-site.ts';
import type { ProblemError } from '../errors.ts';
import { validationProblem } from './problems.ts';

/**
 * An API route that changes state and declares no body (no body schema, no upload, no form) takes
 * none: what it would silently ignore is refused, as an unknown member of a body it takes is
 * (docs/api-conventions.md), and as a route with no query schema refuses any parameter.
 */
export function takesNoBody(route: AnyRoute): boolean {
  const multipart = route.transaction === 'none' && route.multipart !== undefined;
  return (
    STATE_CHANGING_METHODS.has(route.method) &&
    !route.schema.body &&
    !multipart &&
    !route.form &&
    route.url.startsWith(`${API_PREFIX}/`)
  );
}

/**
 * The refusal of a body sent to a route that takes none, if it is one: 422 VALIDATION_FAILED, each
 * member at its pointer as an unknown property, any other JSON value at /body. No body passes, and
 * so does an empty object (`{}`, which many clients send with every POST): it carries nothing.
 */
export function bodyNotTaken(body: unknown): ProblemError | undefined {
  if (body === undefined) return undefined;
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  const members = isObject ? Object.keys(body) : [];
  if (isObject && members.length === 0) return undefined;
  const issues = isObject
    ? members.map((name) => ({
        instancePath: `/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`,
        keyword: 'noBody',
        message: `unknown property: ${name} (this operation takes no body)`,
      }))
    : [{ instancePath: '', keyword: 'noBody', message: 'this operation takes no body' }];
  return validationProblem(issues, 'body');
}
