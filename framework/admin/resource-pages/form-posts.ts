import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import { problem, type ProblemError } from '../../errors.ts';
import { fieldCodeFormatter } from '../../http/register-route.ts';
import { validationProblem } from '../../http/problems.ts';
import { typeboxValidatorCompiler } from '../../http/validation.ts';
import { isHtmx } from '../html.ts';
import { problemText } from '../errors.ts';
import { asSentence, fieldMessage } from '../field-messages.ts';
import type { FieldText } from '../../entity/field-text.ts';
import type { AdminPageContext } from '../page.ts';

/** A form post only: JSON or anything else reaching an admin form target is refused like elsewhere. */
export function requireForm(request: FastifyRequest): void {
  const type = (request.headers['content-type'] ?? '').split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded')
    throw problem('UNSUPPORTED_MEDIA_TYPE', 'The admin forms take application/x-www-form-urlencoded');
}

/** Checks a body against the API route's schema as the route would, answering the same problem document. */
export function bodyChecker(
  schema: TSchema | undefined,
  entity: ResolvedEntity,
  withFieldCodes: boolean,
): (body: unknown) => void {
  if (!schema) return (_body: unknown) => undefined;
  const check = typeboxValidatorCompiler({ schema, method: 'POST', url: '', httpPart: 'body' });
  const format =
    withFieldCodes && entity.def.invalidCodes ? fieldCodeFormatter(entity.def.invalidCodes) : validationProblem;
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

/**
 * A refused field's sentence for people (field-messages.ts): from the field's schema, its value as
 * posted and its FieldText, else the service's own message when it reads as a sentence.
 */
export type FieldDescriber = (field: string, serviceMessage: string) => string;

/**
 * Field errors from the problem document's errors[] (pointer /body/<field>) for the form's own
 * fields, phrased by `describe`; anything else, and a refusal naming no field, goes to the alert
 * as a sentence (errors.ts). No validator text, pointer or code reaches the page: the code rides
 * only in the alert's data-code.
 */
export function errorsOf(p: ProblemError, fieldNames: readonly string[], describe: FieldDescriber): FormErrors {
  const known = new Set(fieldNames);
  const fields: Record<string, string> = {};
  const items: string[] = [];
  const text = problemText(p);
  for (const error of p.errors ?? []) {
    const field = /^\/body\/([^/]+)/.exec(error.pointer)?.[1];
    if (field && known.has(field)) {
      fields[field] ??= describe(field, error.message);
    } else {
      const sentence = field ? undefined : asSentence(error.message);
      if (sentence && !items.includes(sentence)) items.push(sentence);
    }
  }
  const named = p.extensions.field;
  if (typeof named === 'string' && known.has(named) && fields[named] === undefined)
    fields[named] = text.detail ?? text.sentence;
  const marked = Object.keys(fields).length > 0;
  if (!marked && text.detail) items.push(text.detail);
  if (p.errors?.length && !marked && items.length === 0)
    items.push('The form sent a value this page does not take. Reload the page and try again.');
  const title = marked ? 'Some fields need attention: see the messages beside them.' : text.sentence;
  return { fields, alert: { title, items, code: p.code } };
}

/** A describer from a body schema, the body as posted (typed) and the fields' texts. */
export function describer(
  schema: TSchema | undefined,
  body: Record<string, unknown>,
  required: (field: string) => boolean,
  texts: (field: string) => FieldText | undefined,
): FieldDescriber {
  const properties = (schema as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
  return (field, serviceMessage) =>
    fieldMessage(properties[field], body[field], required(field), texts(field)?.messages, serviceMessage);
}

/** Problems a form shows beside its fields; anything else (403, 404, 5xx) is the error page. */
export const formProblem = (p: ProblemError): boolean =>
  p.status === 400 || p.status === 409 || p.status === 413 || p.status === 422;
