import type { ResolvedEntity } from '../entity/resolve.ts';
import { problem, type ProblemError } from '../errors.ts';

/**
 * The state table of an entity, read from its declaration (EntityDefinition.states and each
 * command's `states`): one source for the API's refusal and the admin shell's buttons and create
 * form, so the two cannot disagree.
 */

/** What a command does on a row in its current state. */
export type CommandVerdict = 'acts' | 'unchanged' | 'refused';

const words = (state: string): string => state.replaceAll('_', ' ');

/** The row's state, as the state field holds it; undefined for an entity with no state field. */
export function stateOf(entity: ResolvedEntity, row: Record<string, unknown>): string | undefined {
  const field = entity.def.states?.field;
  return field === undefined ? undefined : String(row[field]);
}

/** Acts, changes nothing, or is refused; a command with no declared states always acts. */
export function verdictOf(entity: ResolvedEntity, command: string, row: Record<string, unknown>): CommandVerdict {
  const states = entity.def.commands?.[command]?.states;
  const state = stateOf(entity, row);
  if (!states || state === undefined) return 'acts';
  if (states.from.includes(state)) return 'acts';
  return states.unchanged?.includes(state) ? 'unchanged' : 'refused';
}

/** Whether the shell offers the command on this row: only where it acts. */
export const offersCommand = (entity: ResolvedEntity, command: string, row: Record<string, unknown>): boolean =>
  verdictOf(entity, command, row) === 'acts';

/** The refusal of a command in a state it does not accept: the entity's code, the state named. */
export function commandRefusal(entity: ResolvedEntity, command: string, row: Record<string, unknown>): ProblemError {
  const { field, refusal } = entity.def.states!;
  const state = stateOf(entity, row)!;
  const hint = entity.def.commands?.[command]?.states?.hint;
  const detail = `This ${entity.names.label.toLowerCase()} is ${words(state)}: ${command.replaceAll('-', ' ')} does not apply.${hint ? ` ${hint}` : ''}`;
  return problem(refusal, detail, { extensions: { field, state } });
}

/** The values a create may give the state field; undefined when any may. */
export const initialStates = (entity: ResolvedEntity): readonly string[] | undefined => entity.def.states?.initial;

/** Refuses a create body whose state field names a value a create may not take. */
export function checkInitialState(entity: ResolvedEntity, values: Record<string, unknown>): void {
  const initial = initialStates(entity);
  const field = entity.def.states?.field;
  if (!initial || field === undefined || values[field] === undefined || initial.includes(String(values[field]))) return;
  const detail = `A new ${entity.names.label.toLowerCase()} is ${initial.map(words).join(' or ')}; ${field} cannot start as ${words(String(values[field]))}.`;
  throw problem(entity.def.states!.refusal, detail, { extensions: { field, state: String(values[field]) } });
}

/** The 409 a command's declared states add to its OpenAPI answers; undefined when it declares none. */
export function statesProblem(entity: ResolvedEntity, command: string): string | undefined {
  const states = entity.def.commands?.[command]?.states;
  const declared = entity.def.states;
  if (!states || !declared) return undefined;
  const oneOf = (values: readonly string[]) => (values.length === 1 ? values[0] : `one of ${values.join(', ')}`);
  const unchanged = states.unchanged?.length
    ? `; when it is ${oneOf(states.unchanged)} the command changes nothing`
    : '';
  return `${declared.refusal}: the ${entity.names.label.toLowerCase()}'s ${declared.field} is not ${oneOf(states.from)}${unchanged}. The problem names the field and the state.`;
}

/**
 * Refuses a PATCH (or PUT) moving the state field where the entity's declared edges
 * (EntityStates.patchMoves) do not go from the row as it stands: 409 with the declared code,
 * naming the field and the state, the moves it may make, and the command that reaches the asked
 * state when one does (CommandStates.to). The same declaration the admin edit form offers.
 */
export function checkPatchMove(
  entity: ResolvedEntity,
  previous: Record<string, unknown>,
  values: Record<string, unknown>,
): void {
  const states = entity.def.states;
  if (!states?.patchMoves) return;
  const { field, refusal } = states;
  const to = values[field];
  const from = stateOf(entity, previous);
  if (to === undefined || to === null || String(to) === from) return;
  const allowed = states.patchMoves(previous as never);
  if (allowed.includes(String(to))) return;
  const label = entity.names.label.toLowerCase();
  const by = Object.entries(entity.def.commands ?? {}).find(
    ([, command]) => command.states?.to === String(to) && (from === undefined || command.states.from.includes(from)),
  )?.[0];
  const detail = [
    `This ${label} is ${words(from ?? 'empty')}: an update cannot move it to ${words(String(to))}.`,
    allowed.length > 0 ? `It may move to ${allowed.map(words).join(' or ')}.` : 'An update cannot move it from there.',
    by ? `To move it to ${words(String(to))}, use POST ${entity.commandRoute(by).replace(/^POST /, '')}.` : undefined,
  ]
    .filter(Boolean)
    .join(' ');
  throw problem(refusal, detail, { extensions: { field, state: from } });
}
