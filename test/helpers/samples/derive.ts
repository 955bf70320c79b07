import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../../../framework/entity/resolve.ts';
import { declaredReferences } from '../../../framework/entity/references.ts';
import { enumValues } from '../../../framework/schema/column-types.ts';
import { checkedSample, sampleValue } from './values.ts';

/**
 * Request bodies and expected answers derived from an entity's declarations, so that the suites
 * (conformance, security, the sqlmap target) hold a new module to the contract with no edit of
 * theirs: field schemas (formats, enums, bounds, WithDefault: test/helpers/samples/values.ts),
 * `references` (the named row is made first, in the same tenant, through its own entity's API),
 * a command's `actors` (a person of the tenant who may act), `states` (a create's initial state,
 * the moves a PATCH may make, the commands a row's state accepts) and the unique keys. An
 * override (test/helpers/samples/overrides.ts) is merged last, for what no declaration says.
 */

/** Where the values a body names come from: the suite using the derivation provides them. */
export interface SampleSources {
  /** The id of a row of the entity (`user.user`) a body at this tenant may name, made through that entity's own API. */
  reference(entityKey: string, options: { fresh: boolean }): Promise<string>;
  /** The id of an active person of the tenant whose roles grant the permission (CommandDefinition.actors). */
  actor(permission: string): Promise<string>;
}

/** What a write must answer in the suites' steps: success (2xx), or exactly this refusal. */
export type Outcome = 'success' | { status: number; code: string };

type Body = Record<string, unknown>;
const propertiesOf = (schema: TSchema): Record<string, TSchema> =>
  ((schema as { properties?: Record<string, TSchema> }).properties ?? {}) as Record<string, TSchema>;

/**
 * The entity's unique fields and the code a second row with the same value answers: the code its
 * uniqueCodes names, otherwise the generic 409 ALREADY_EXISTS (docs/architecture.md, "Unique keys in words").
 */
export function uniqueFields(entity: ResolvedEntity): { field: string; code: string }[] {
  const coded = Object.entries(entity.def.uniqueCodes ?? {}).map(([field, rule]) => ({
    field,
    code: String(rule!.code),
  }));
  const plain = (entity.def.storage?.unique ?? []).map((u) => ({
    field: typeof u === 'string' ? u : u.field,
    code: 'ALREADY_EXISTS',
  }));
  return [...coded, ...plain];
}

/**
 * A body field whose value a declaration says must name something that exists: a row of another
 * entity (`references`; `fresh` when a unique key holds it, so each body needs a row of its own),
 * or a person who may act with a permission (a command's `actors`).
 */
export type DeclaredSlot = { field: string; reference: string; fresh: boolean } | { field: string; actor: string };

/** The declared slots of a create body (a singleton's PUT body too). */
export function createSlots(entity: ResolvedEntity): DeclaredSlot[] {
  const settable = propertiesOf(entity.schemas.create);
  const unique = new Set(uniqueFields(entity).map((u) => u.field));
  return Object.entries(declaredReferences(entity.def))
    .filter(([field]) => field in settable)
    .map(([field, reference]) => ({ field, reference, fresh: unique.has(field) }));
}

/** The declared slots of a command's body: its references, and its actors (a person, who is a user too). */
export function commandSlots(entity: ResolvedEntity, command: string): DeclaredSlot[] {
  const definition = entity.def.commands?.[command];
  if (!definition?.body) return [];
  const settable = propertiesOf(definition.body);
  const actors = definition.actors ?? {};
  return [
    ...Object.entries(definition.references ?? {})
      .filter(([field]) => field in settable && !(field in actors))
      .map(([field, reference]) => ({ field, reference, fresh: false })),
    ...Object.entries(actors)
      .filter(([field]) => field in settable)
      .map(([field, actor]) => ({ field, actor })),
  ];
}

/** The state a create body takes: the first of the entity's declared initial states, when the body may set it. */
export function initialState(entity: ResolvedEntity): Body {
  const states = entity.def.states;
  if (!states?.initial?.length || !(states.field in propertiesOf(entity.schemas.create))) return {};
  return { [states.field]: states.initial[0] };
}

/** The slots' values from the sources, but for the fields the override gives. */
async function slotValues(slots: readonly DeclaredSlot[], sources: SampleSources, given: Body): Promise<Body> {
  const out: Body = {};
  for (const slot of slots) {
    if (slot.field in given) continue;
    out[slot.field] =
      'actor' in slot
        ? await sources.actor(slot.actor)
        : await sources.reference(slot.reference, { fresh: slot.fresh });
  }
  return out;
}

/**
 * A create body (a singleton's PUT body too): every settable field derived from its schema, each
 * reference naming a row made first, the state field at the first of its declared initial states,
 * then the override's values (`given`) over all of it.
 */
export async function derivedCreateBody(
  entity: ResolvedEntity,
  n: number,
  sources: SampleSources,
  given: Body = {},
): Promise<Body> {
  const body = checkedSample(entity.schemas.create, n, `${entity.names.key} create body`) as Body;
  return { ...body, ...(await slotValues(createSlots(entity), sources, given)), ...initialState(entity), ...given };
}

/**
 * A command's body, or undefined when it takes none: derived from its schema, each reference
 * naming a row made first, each actor field a person who may act, then the override's values.
 */
export async function derivedCommandBody(
  entity: ResolvedEntity,
  command: string,
  n: number,
  sources: SampleSources,
  given: Body = {},
): Promise<Body | undefined> {
  const schema = entity.def.commands?.[command]?.body;
  if (!schema) return undefined;
  const body = checkedSample(schema, n, `${entity.names.key} ${command} body`) as Body;
  return { ...body, ...(await slotValues(commandSlots(entity, command), sources, given)), ...given };
}

/**
 * What a command sent to a row in this state answers, by the declarations: a state its `states`
 * accept (`from`, or `unchanged`) succeeds, any other is the entity's declared refusal (409).
 * A command declaring no states, or a row not made yet (a singleton's first command), succeeds.
 */
export function commandOutcome(
  entity: ResolvedEntity,
  command: string,
  row: Readonly<Record<string, unknown>> | undefined,
): Outcome {
  const accepted = entity.def.commands?.[command]?.states;
  const states = entity.def.states;
  if (!accepted || !states || !row) return 'success';
  const current = String(row[states.field]);
  if (accepted.from.includes(current) || (accepted.unchanged ?? []).includes(current)) return 'success';
  return { status: 409, code: String(states.refusal) };
}

/** The fields of a command's body that name a person who must be able to act (422 VALIDATION_FAILED for anyone else). */
export const actorFields = (entity: ResolvedEntity, command: string): string[] =>
  Object.keys(entity.def.commands?.[command]?.actors ?? {});

/**
 * The value a PATCH may give one field of this row, different from the one it holds, or
 * undefined when there is none: the state field takes one of the moves its `states.patchMoves`
 * declares from the row's state (none declared: any other value of its schema), a reference
 * another row made for it.
 */
export async function patchValue(
  entity: ResolvedEntity,
  field: string,
  row: Readonly<Record<string, unknown>>,
  n: number,
  sources: SampleSources,
): Promise<unknown> {
  const schema = propertiesOf(entity.schemas.patch)[field];
  if (!schema) return undefined;
  const states = entity.def.states;
  if (states?.field === field && states.patchMoves) {
    const moves = states.patchMoves(row as never).filter((state) => state !== row[field]);
    return moves[0];
  }
  const target = declaredReferences(entity.def)[field];
  if (target) return sources.reference(target, { fresh: true });
  const value = sampleValue(schema, n, `${entity.names.key} patch ${field}`);
  return JSON.stringify(value) === JSON.stringify(row[field]) ? undefined : value;
}

/** The entities a create or a command body of the entity names (actors aside): rows the suites may make ahead. */
export function referenceTargets(entity: ResolvedEntity): string[] {
  const slots = [
    ...createSlots(entity),
    ...Object.keys(entity.def.commands ?? {}).flatMap((command) => commandSlots(entity, command)),
  ];
  return [...new Set(slots.flatMap((slot) => ('actor' in slot ? [] : [slot.reference])))];
}

/**
 * A state the row cannot be PATCHed to from where it stands, by its `states.patchMoves`, or
 * undefined when every value is allowed or none is left out: the refusal the suites expect.
 */
export function refusedPatchMove(
  entity: ResolvedEntity,
  row: Readonly<Record<string, unknown>>,
): { field: string; value: string; code: string } | undefined {
  const states = entity.def.states;
  if (!states?.patchMoves || !entity.patchable.includes(states.field)) return undefined;
  const schema = propertiesOf(entity.schemas.patch)[states.field];
  const values = (schema ? (enumValues(schema) ?? []) : []).filter((v): v is string => typeof v === 'string');
  const allowed = new Set([String(row[states.field]), ...states.patchMoves(row as never)]);
  const value = values.find((v) => !allowed.has(v));
  return value === undefined ? undefined : { field: states.field, value, code: String(states.refusal) };
}
