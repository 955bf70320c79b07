import type { TSchema } from 'typebox';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { Registry } from '../entity/registry.ts';
import { titleCase } from '../entity/names.ts';
import { hasDateTimeFormat } from '../entity/date-time.ts';
import { isMarkdown } from '../markdown/markdown-field.ts';
import type { RevisionItem } from '../history/record-history.ts';
import type { ActivityItem } from '../events/activity.ts';
import { formatDateTime, isoDate } from '../format.ts';
import { displayField } from './resource-pages/widgets.ts';
import { lineDiff, type DiffLine } from './text-diff.ts';
import { peopleLabels } from './labels.ts';
import type { AdminPageContext } from './page.ts';
import { entitiesWithPages, referenceCells, referenceTarget, type ReferenceCell } from './resource-pages/references.ts';

/**
 * History and activity as people read them: who did it, when, and what changed, in sentences
 * ("Due moved from 1 Dec 2026, 09:00 UTC to 5 Dec 2026, 09:00 UTC"), long texts as a line diff.
 * No field keys, event names or codes: fields by their labels (FieldText), events in words.
 */

/** One change of a revision, in words; a long text also as its diff. */
export interface ChangeView {
  text: string;
  diff?: DiffLine[];
}

/** Who acted, in words, linked to the person's page where the caller may open it. */
export interface ActorView {
  text: string;
  href?: string;
}

type Actor = RevisionItem['actor'];

/** Texts longer than this, or with several lines, show as a diff rather than "from … to …". */
const LONG_TEXT = 80;

/**
 * The people entity: the entity stored in the identity table `users` (framework/access/identity-tables.ts),
 * whose rows name the actors. Undefined in an installation without one.
 */
function peopleEntity(registry: Pick<Registry, 'entities'>): ResolvedEntity | undefined {
  return registry.entities.find((e) => e.names.table === 'users' && !e.singleton);
}

/**
 * The people among these actors, by id, as the caller may see them: their titles, linked to their
 * pages, in one statement (the people entity's readMany under the caller's access); none when the
 * caller may not read people.
 */
export async function actorCells(ctx: AdminPageContext, actors: readonly Actor[]): Promise<Map<string, ReferenceCell>> {
  const registry = ctx.services.registry;
  const people = peopleEntity(registry);
  if (!people) return new Map();
  const target = referenceTarget(ctx.services, people.names.key, entitiesWithPages(ctx.services));
  if (!target) return new Map();
  const rows = actors.flatMap((a) => (a.userId ? [{ id: a.userId, actor: a.userId }] : []));
  const cells = await referenceCells(ctx, { actor: target }, rows);
  return cells.get('actor') ?? new Map();
}

/** An actor in words: the person (and the token they used), the operator, or the service. */
export function actorWords(actor: Actor, people: ReadonlyMap<string, ReferenceCell>, me: string | null): ActorView {
  if (actor.kind === 'operator') return { text: 'The operator' };
  if (actor.userId) {
    const cell = people.get(actor.userId);
    const person: ActorView =
      actor.userId === me
        ? { text: 'You' }
        : cell
          ? { text: cell.text, ...(cell.href ? { href: cell.href } : {}) }
          : { text: 'Someone' };
    if (actor.kind === 'token' && actor.name)
      return { ...person, text: `${person.text}, with the access token “${actor.name}”` };
    if (actor.kind === 'subscription')
      return { ...person, text: `The service, after ${person.text === 'You' ? 'your' : `${person.text}’s`} change` };
    return person;
  }
  if (actor.kind === 'job') return { text: 'The service, on its schedule' };
  return { text: 'The service' };
}

/** What a revision did, as the first words of its line: "created it", "used “Assign”", … */
export function operationWords(entity: ResolvedEntity, operation: string): string {
  switch (operation) {
    case 'create':
      return 'created it';
    case 'update':
      return 'changed it';
    case 'delete':
      return 'deleted it';
    case 'restore':
      return 'restored an earlier version';
    default: {
      const label = entity.def.commands?.[operation]?.admin?.label ?? titleCase(operation);
      return `used “${label}”`;
    }
  }
}

/** Field names and values as the entity's pages print them. */
export interface FieldWords {
  labelOf(field: string): string;
  valueOf(field: string, value: unknown): string;
}

export function fieldWords(entity: ResolvedEntity, labelOf: (field: string) => string): FieldWords {
  const schemas = (entity.schemas.row as { properties?: Record<string, TSchema> }).properties ?? {};
  return {
    labelOf,
    valueOf: (field, value) => {
      const schema = schemas[field];
      if (value === null || value === undefined || value === '') return '';
      if (schema && hasDateTimeFormat(entity.def.fields[field] ?? schema) && typeof value === 'string')
        return formatDateTime(value);
      return displayField(schema, value);
    },
  };
}

const isLongText = (value: unknown): value is string =>
  typeof value === 'string' && (value.length > LONG_TEXT || value.includes('\n'));

/** A revision's changes in words: a create lists what it set; a change says from what to what. */
export function changeWords(entity: ResolvedEntity, words: FieldWords, revision: RevisionItem): ChangeView[] {
  return revision.changes.flatMap(({ field, old, new: now }): ChangeView[] => {
    const label = words.labelOf(field);
    const before = words.valueOf(field, old);
    const after = words.valueOf(field, now);
    if (revision.operation === 'create')
      return after === '' ? [] : [{ text: `${label}: ${isLongText(now) ? shorten(after) : after}` }];
    const markdown = isMarkdown(entity.def.fields[field]);
    if (
      (isLongText(old) || isLongText(now) || markdown) &&
      typeof (old ?? '') === 'string' &&
      typeof (now ?? '') === 'string'
    ) {
      return [{ text: `${label} changed:`, diff: lineDiff(String(old ?? ''), String(now ?? '')) }];
    }
    if (before === '') return [{ text: `${label} set to ${after}` }];
    if (after === '') return [{ text: `${label} cleared (was ${before})` }];
    const moved = hasDateTimeFormat(entity.def.fields[field] ?? ({} as TSchema)) ? 'moved' : 'changed';
    return [{ text: `${label} ${moved} from ${before} to ${after}` }];
  });
}

const shorten = (text: string) => {
  const line = text.split('\n')[0]!;
  return line.length > LONG_TEXT ? `${line.slice(0, LONG_TEXT - 1)}…` : `${line}${text.includes('\n') ? ' …' : ''}`;
};

/** When, for people and for <time datetime>. */
export const whenWords = (at: Date | string) => ({ text: formatDateTime(at), iso: isoDate(at) });

/**
 * An event in words for the activity page: the resource it concerns by its people label and what
 * happened ("Task: created", "Task: assigned", "Site: suspended"), never its name.
 */
export function eventWords(registry: Pick<Registry, 'entities'>, item: Pick<ActivityItem, 'event' | 'entity'>): string {
  const parts = item.event.split('.');
  const verb = (parts.at(-1) ?? item.event).replaceAll('_', ' ');
  const entity = item.entity ? registry.entities.find((e) => e.names.key === item.entity) : undefined;
  const subject = entity ? peopleLabels(entity).label : (SUBJECTS[parts[0] ?? ''] ?? titleCase(parts[0] ?? ''));
  return `${subject}: ${verb}`;
}

/** The subjects of events that concern no resource, by their module. */
const SUBJECTS: Readonly<Record<string, string>> = { tenant: 'Site', auth: 'Sign-in', billing: 'Billing' };
