import type { Access, RouteDefinition } from '../../entity/define.ts';
import { SEARCH_MAX_LENGTH } from '../../operations/page-query.ts';
import type { ModuleRegistry as Registry, Services } from '../../contracts/services.ts';
import type { ResolvedEntity } from '../../entity/resolve.ts';
import type { Page } from '../../operations/paging.ts';
import { apiRoute, runApiRoute } from '../api-route.ts';
import type { AdminPageContext } from '../page.ts';
import { isMarkdown } from '../../markdown/markdown-field.ts';
import { ADMIN_MARKDOWN, renderMarkdown } from '../../markdown/render.ts';
import { apiOf, generatedResources } from './resource-api.ts';
import { display } from './widgets.ts';
import { peopleLabels } from '../labels.ts';
import { actorsNarrowing, whyCannotAct } from '../../access/actors.ts';

/**
 * References in the shell (EntityDefinition.admin.references, CommandDefinition.references): a field
 * holding another entity's id is shown as that row's title, linked to its page, and chosen from
 * the referenced list rather than typed. The API keeps the ids; these are the pages' views of them.
 */

type Row = Record<string, unknown> & { id: string };

/** The referenced entity as the shell reaches it: its title field, its read access and its list route. */
export interface ReferenceTarget {
  entity: ResolvedEntity;
  titleField: string;
  read: Access;
  list: RouteDefinition | undefined;
  /** Its generated pages' path, when it has them (links lead there). */
  pagesPath: string | undefined;
  /** For a command's actor field (CommandDefinition.actors): the people its picker may offer. */
  actor?: ActorRule;
}

/** A command's actor field: the permission the person must hold, and the key its type-ahead names it by. */
export interface ActorRule {
  /** `<entity key>.<command>.<field>`, e.g. task.task.assign.assigneeId. */
  key: string;
  /** The entity the command belongs to (its label words a refusal) and the permission needed. */
  entity: ResolvedEntity;
  permission: string;
  /** The key of the entity the field references: the people's (user.user). */
  references: string | undefined;
}

const actorsByRegistry = new WeakMap<Registry, ReadonlyMap<string, ActorRule>>();

/** Every command's actor fields, by key: worked out once per registry. */
export function actorRules(registry: Registry): ReadonlyMap<string, ActorRule> {
  let rules = actorsByRegistry.get(registry);
  if (!rules) {
    const found = new Map<string, ActorRule>();
    for (const entity of registry.entities) {
      for (const [command, definition] of Object.entries(entity.def.commands ?? {})) {
        for (const [field, permission] of Object.entries(definition.actors ?? {})) {
          const key = `${entity.names.key}.${command}.${field}`;
          found.set(key, { key, entity, permission, references: definition.references?.[field] });
        }
      }
    }
    rules = found;
    actorsByRegistry.set(registry, rules);
  }
  return rules;
}

/** A command's actor fields as form fields: field → its rule. */
export function commandActors(
  registry: Registry,
  entity: ResolvedEntity,
  command: string,
): Readonly<Record<string, ActorRule>> {
  const out: Record<string, ActorRule> = {};
  for (const field of Object.keys(entity.def.commands?.[command]?.actors ?? {})) {
    const rule = actorRules(registry).get(`${entity.names.key}.${command}.${field}`);
    if (rule) out[field] = rule;
  }
  return out;
}

/** How a reference prints: the row's title, linked to its page when the caller may open it. */
export interface ReferenceCell {
  text: string;
  href?: string;
}

/** Options a picker offers at most; past this many rows it offers a search over the referenced list's `q`. */
export const PICKER_SIZE = 50;

/** A picker as templates/admin/components/picker.eta takes it. */
export interface PickerModel {
  options: { value: string; label: string }[];
  /** Present when the list has more rows than the options show: the type-ahead and its no-JS search. */
  search?: { url?: string; q: string; label: string; maxlength: number };
  /** What the options leave out, said once (for the no-JS reader). */
  note?: string;
}

const inTransaction = (route: ReturnType<typeof apiRoute>): route is RouteDefinition =>
  route !== undefined && route.transaction !== 'none';

/** The target of a reference by entity key; undefined for a key no collection entity has (then the field stays a plain id). */
export function referenceTarget(
  services: Services,
  key: string,
  withPages: ReadonlySet<string>,
): ReferenceTarget | undefined {
  const entity = services.registry.entities.find((e) => e.names.key === key);
  if (!entity || entity.singleton) return undefined;
  const read = apiRoute(services, entity.names.operationId('read'));
  if (!read) return undefined;
  const list = apiRoute(services, entity.names.operationId('list'));
  return {
    entity,
    titleField: entity.def.admin?.title ?? entity.fields[0] ?? 'id',
    read: read.access,
    list: inTransaction(list) ? list : undefined,
    pagesPath: withPages.has(key) ? entity.names.adminPath : undefined,
  };
}

/** A referenced row's title: its title field, else its id. */
const titleOf = (target: ReferenceTarget, row: Row): string => display(row[target.titleField]) || row.id;

/**
 * The cells of every reference field of these rows: field → id → cell. One statement per
 * referenced entity (EntityOperations.readMany over the page's ids), never one per row, and none
 * for an entity the caller may not read (its fields then print as ids).
 */
export async function referenceCells(
  ctx: AdminPageContext,
  targets: Readonly<Record<string, ReferenceTarget>>,
  rows: readonly Row[],
): Promise<Map<string, Map<string, ReferenceCell>>> {
  const cells = new Map<string, Map<string, ReferenceCell>>();
  const fieldsByTarget = new Map<string, string[]>();
  for (const [field, target] of Object.entries(targets)) {
    if (!ctx.can(target.read)) continue;
    const key = target.entity.names.key;
    fieldsByTarget.set(key, [...(fieldsByTarget.get(key) ?? []), field]);
  }
  for (const [key, fields] of fieldsByTarget) {
    const target = targets[fields[0]!]!;
    const ids = rows.flatMap((row) =>
      fields.map((field) => row[field]).filter((id): id is string => typeof id === 'string'),
    );
    if (ids.length === 0) continue;
    const found = await ctx.services.operations.of(key).readMany(ctx.tx, ids);
    const byId = new Map(found.map((row) => [row.id, row as Row]));
    for (const field of fields) {
      const forField = new Map<string, ReferenceCell>();
      for (const [id, row] of byId) {
        forField.set(id, {
          text: titleOf(target, row),
          ...(target.pagesPath ? { href: `${target.pagesPath}/${encodeURIComponent(id)}` } : {}),
        });
      }
      cells.set(field, forField);
    }
  }
  return cells;
}

/** The targets of a set of reference declarations (field → entity key), those that resolve. */
export function referenceTargets(
  services: Services,
  references: Readonly<Record<string, string | undefined>> | undefined,
  withPages: ReadonlySet<string>,
): Record<string, ReferenceTarget> {
  const targets: Record<string, ReferenceTarget> = {};
  for (const [field, key] of Object.entries(references ?? {})) {
    const target = key === undefined ? undefined : referenceTarget(services, key, withPages);
    if (target) targets[field] = target;
  }
  return targets;
}

/**
 * The rows a picker offers: the referenced list route run in the page's transaction (its own
 * query, row access and `q`), sorted by the title when the list sorts by it, at most PICKER_SIZE.
 * An actor field's picker reads the same list narrowed to the people who can act (active, with
 * the permission: access/actors.ts), so it never offers anyone the command would refuse.
 */
export async function pickerPage(
  ctx: AdminPageContext,
  target: ReferenceTarget,
  q: string | undefined,
): Promise<Page<Row>> {
  const { entity, list } = target;
  const sort = entity.sortable.includes(target.titleField) ? target.titleField : 'createdAt';
  const search = q !== undefined && q !== '' && entity.searchable.length > 0 ? { q: q.slice(0, 200) } : {};
  const query = { limit: PICKER_SIZE, offset: 0, sort, ...search };
  if (target.actor) {
    const narrow = await actorsNarrowing(ctx.tx, target.actor.permission);
    return (await ctx.services.operations.of(entity.names.key).list(ctx.tx, query, narrow)) as Page<Row>;
  }
  return (await runApiRoute(list!, ctx, { query })) as Page<Row>;
}

/** The option elements of a picker: value the id, label the row's title. */
export const pickerOptions = (target: ReferenceTarget, rows: readonly Row[]) =>
  rows.map((row) => ({ value: row.id, label: titleOf(target, row) }));

/**
 * A picker for one field, or undefined when the caller cannot list the referenced rows (the field
 * then stays a text input for the id). The value already chosen stays among the options.
 */
export async function pickerFor(
  ctx: AdminPageContext,
  target: ReferenceTarget,
  options: { selected: string; q: string | undefined },
): Promise<PickerModel | undefined> {
  if (!target.list || !ctx.can(target.list.access)) return undefined;
  const page = await pickerPage(ctx, target, options.q);
  const offered = pickerOptions(target, page.items);
  if (options.selected !== '' && !offered.some((o) => o.value === options.selected)) {
    const [chosen] = await ctx.services.operations.of(target.entity.names.key).readMany(ctx.tx, [options.selected]);
    // A person who cannot act is not offered, even as the value a refused post chose.
    const offerable =
      chosen &&
      (!target.actor ||
        (await whyCannotAct(ctx.tx, target.actor.entity, chosen.id, target.actor.permission)) === undefined);
    if (offerable) offered.unshift({ value: chosen.id, label: titleOf(target, chosen as Row) });
  }
  const searching = options.q !== undefined && options.q !== '';
  const large = page.total > page.items.length || searching;
  const plural = peopleLabels(target.entity).labelPlural.toLowerCase();
  if (!large || target.entity.searchable.length === 0) return { options: offered };
  return {
    options: offered,
    search: {
      ...(target.pagesPath ? { url: optionsUrl(target) } : {}),
      q: options.q ?? '',
      label: `Search ${plural}`,
      // The type-ahead's route (form-aids.ts, GET <list>/options) refuses a longer text.
      maxlength: SEARCH_MAX_LENGTH,
    },
    note:
      page.items.length === 0
        ? `No ${plural} match “${options.q}”.`
        : page.total > page.items.length
          ? `Showing the first ${page.items.length} of ${page.total}${page.totalExact ? '' : '+'} ${plural}${searching ? ` matching “${options.q}”` : ''}; search to narrow the list.`
          : `${page.items.length} ${plural} match “${options.q}”.`,
  };
}

/** The parameter of the type-ahead that names the actor field it offers people for. */
export const ACTOR_FIELD = '_for';

/** The type-ahead's URL: the referenced list's options, narrowed for an actor field. */
const optionsUrl = (target: ReferenceTarget): string =>
  `${target.pagesPath}/options${target.actor ? `?${ACTOR_FIELD}=${encodeURIComponent(target.actor.key)}` : ''}`;

const pagesByServices = new WeakMap<Services, ReadonlySet<string>>();

/** The keys of the entities that have generated pages: where a reference's link and type-ahead lead. */
export function entitiesWithPages(services: Services): ReadonlySet<string> {
  let keys = pagesByServices.get(services);
  if (!keys) {
    keys = new Set(
      generatedResources(services.registry)
        .filter((entity) => apiOf(services, entity) !== undefined)
        .map((entity) => entity.names.key),
    );
    pagesByServices.set(services, keys);
  }
  return keys;
}

/** A list's reference cells shown as the referenced rows' titles, linked (`columns`: the table's fields in order). */
export async function linkReferenceCells(
  ctx: AdminPageContext,
  entity: ResolvedEntity,
  columns: readonly string[],
  items: readonly Row[],
  table: { rows: { cells: ReferenceCell[] }[] },
): Promise<void> {
  const shown = Object.fromEntries(
    Object.entries(
      referenceTargets(ctx.services, entity.def.admin?.references, entitiesWithPages(ctx.services)),
    ).filter(([field]) => columns.includes(field)),
  );
  if (Object.keys(shown).length === 0) return;
  const cells = await referenceCells(ctx, shown, items);
  items.forEach((row, r) => {
    columns.forEach((field, c) => {
      const id = row[field];
      const cell = typeof id === 'string' ? cells.get(field)?.get(id) : undefined;
      if (cell && table.rows[r]) table.rows[r].cells[c] = cell;
    });
  });
}

/** A detail page's values with its references titled and linked and its Markdown fields rendered. */
export async function detailValues<I extends { value: string }>(
  ctx: AdminPageContext,
  entity: ResolvedEntity,
  row: Row,
  fields: readonly string[],
  items: readonly I[],
): Promise<(I & { href?: string; html?: string })[]> {
  const cells = await referenceCells(
    ctx,
    referenceTargets(ctx.services, entity.def.admin?.references, entitiesWithPages(ctx.services)),
    [row],
  );
  return items.map((item, i) => {
    const field = fields[i]!;
    const id = row[field];
    const cell = typeof id === 'string' ? cells.get(field)?.get(id) : undefined;
    if (cell) return { ...item, value: cell.text, ...(cell.href ? { href: cell.href } : {}) };
    if (isMarkdown(entity.def.fields[field]) && typeof row[field] === 'string')
      return { ...item, html: renderMarkdown(row[field], ADMIN_MARKDOWN) };
    return item;
  });
}
