import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { problem, type ProblemError } from '../../errors.ts';
import { fieldCodeFormatter } from '../../http/register-route.ts';
import { validationProblem } from '../../http/problems.ts';
import { typeboxValidatorCompiler } from '../../http/validation.ts';
import { isHtmx } from '../html.ts';
import type { AdminPageContext } from '../page.ts';

/** A form post only: JSON or anything else reaching an admin form target is refused like elsewhere. */
export function requireForm(request: FastifyRequest): void {
  const type = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw problem('UNSUPPORTED_MEDIA_TYPE', 'The admin forms take application/x-www-form-urlencoded');
}

/** Checks a body against the API route's schema as the route would, answering the same problem document. */
export function bodyChecker(schema: TSchema | undefined, entity: ResolvedEntity, withFieldCodes: boolean): (body: unknown) => void {
  if (!schema) return (_body: unknown) => undefined;
  const check = typeboxValidatorCompiler({ schema, method: 'POST', url: '', httpPart: 'body' });
  const format = withFieldCodes && entity.def.invalidCodes ? fieldCodeFormatter(entity.def.invalidCodes) : validationProblem;
  return (body: unknown) => {
    const result = check(body) as { error?: never[] };
    if (result.error) throw format(result.error, 'body');
  };
}

/** After a successful post: 303 to the page (post/redirect/get); htmx is told to navigate there. */
export function done(ctx: AdminPageContext, location: string): string {
  if (isHtmx(ctx.request.headers)) {
    ctx.reply.code(200).header('hx-redirect', location);
    return '';
  }
  return ctx.redirect(location);
}

/** What a refused post shows: the field errors beside their fields, the rest as the alert. */
export interface FormErrors {
  fields: Record<string, string>;
  alert: { title: string; items: string[]; code: string };
}

/** Field errors from the problem document's errors[] (pointer /body/<field>), the rest as the alert. */
export function errorsOf(p: ProblemError): FormErrors {
  const fields: Record<string, string> = {};
  const items: string[] = [];
  for (const error of p.errors ?? []) {
    const field = /^\/body\/([^/]+)/.exec(error.pointer)?.[1];
    if (field && fields[field] === undefined) fields[field] = error.message;
    else if (!field) items.push(error.message);
  }
  const named = p.extensions.field;
  if (typeof named === 'string' && fields[named] === undefined) fields[named] = p.message;
  const title = p.errors?.length ? 'The form has errors; see the fields marked below.' : p.message;
  return { fields, alert: { title, items, code: p.code } };
}

/** Problems a form shows beside its fields; anything else (403, 404, 5xx) is the error page. */
export const formProblem = (p: ProblemError): boolean => p.status === 400 || p.status === 409 || p.status === 413 || p.status === 422;
