import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';

type Validator = ReturnType<typeof Compile>;

/** The compiled payload schemas of the composed modules' events (ModuleDefinition.eventPayloads). */
const validators = new Map<string, Validator>();

/** Compiles the declared payload schemas, once at composition: each publish is checked against its event's. */
export function installEventPayloads(schemas: ReadonlyMap<string, TSchema>): void {
  for (const [event, schema] of schemas) validators.set(event, Compile(schema));
}

/**
 * Why a payload does not match its event's declared schema (pointer and message, one per
 * mismatch), or undefined when it matches or the event declares none.
 */
export function payloadMismatch(event: string, payload: unknown): string | undefined {
  const check = validators.get(event);
  if (!check || check.Check(payload)) return undefined;
  return [...check.Errors(payload)]
    .map((e) => {
      const issue = e as { instancePath?: string; message?: string };
      return `${issue.instancePath || '/'} ${issue.message ?? 'invalid'}`;
    })
    .join('; ');
}
