import Type from 'typebox';
import { registerAdminPage, type AdminPageContext, type AdminSite } from '../page.ts';
import { renderTemplate } from '../render.ts';
import { cursorPager } from '../list-query.ts';
import { AUDIT_READ, activityOf, eventEntities, type ActivityFilter } from '../../events/activity.ts';
import { actorCells, actorWords, eventWords, whenWords } from '../history-words.ts';
import { entitiesWithPages } from '../resource-pages/references.ts';
import { runApiRoute, apiRoute } from '../api-route.ts';
import type { RouteDefinition } from '../../entity/define.ts';

export const ACTIVITY_PAGE = '/admin/audit/activity';
const PAGE_SIZE = 25;
/** The people a person filter offers at most (the first by address). */
const PEOPLE_OFFERED = 100;

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const ActivityPageQuery = Type.Object(
  {
    person: Type.Optional(Type.String({ maxLength: 36 })),
    kind: Type.Optional(Type.String({ maxLength: 200 })),
    from: Type.Optional(Type.String({ maxLength: 10 })),
    to: Type.Optional(Type.String({ maxLength: 10 })),
    after: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
);

interface Choice {
  value: string;
  label: string;
  selected: boolean;
}

/**
 * GET /admin/audit/activity, with audit:read (as the API's GET /api/v1/audit/activity): the
 * tenant's events newest first in words (who, when, what, the record it concerns, linked), with
 * filters by person, kind of change and dates; a plain GET form, paged by the list's cursor.
 * The page narrows the framework's reader (the API's list, whose filters are the query language's) by its own form.
 */
export function registerActivityPage(site: AdminSite): void {
  const activity = activityOf(site.services.registry);
  const registry = site.services.registry;
  // Every kind of change a module declares, in words, each once.
  const entities = eventEntities(registry.modules, registry.entities);
  const kinds = [...registry.events]
    .map((event) => ({ event, label: eventWords(registry, { event, entity: entities.get(event) ?? null }) }))
    .sort((a, b) => a.label.localeCompare(b.label));

  registerAdminPage(site, {
    path: ACTIVITY_PAGE,
    access: { permission: AUDIT_READ },
    summary: 'Activity',
    schema: { querystring: ActivityPageQuery },
    handler: async (ctx) => {
      const query = ctx.query;
      const filter: ActivityFilter = {
        ...(query.person && /^[0-9a-f-]{36}$/i.test(query.person) ? { actorId: query.person } : {}),
        ...(query.kind && registry.events.has(query.kind) ? { events: [query.kind] } : {}),
        ...(query.from && DAY.test(query.from) ? { from: new Date(`${query.from}T00:00:00Z`) } : {}),
        ...(query.to && DAY.test(query.to) ? { to: new Date(Date.parse(`${query.to}T00:00:00Z`) + 86_400_000) } : {}),
      };
      const { page } = await activity.page(
        ctx.tx,
        { limit: PAGE_SIZE, offset: 0, sort: '-at', ...(query.after ? { after: query.after } : {}) },
        filter,
      );
      const people = await actorCells(
        ctx,
        page.items.map((i) => i.actor),
      );
      const withPages = entitiesWithPages(ctx.services);
      const rows = page.items.map((item) => {
        const when = whenWords(item.at);
        const who = actorWords(item.actor, people, ctx.tx.session?.userId ?? null);
        const entity = item.entity ? registry.entity(item.entity) : undefined;
        const href =
          entity && withPages.has(entity.names.key) && item.entityId
            ? `${entity.names.adminPath}/${item.entityId}`
            : undefined;
        return {
          cells: [
            { text: when.text },
            { text: who.text, ...(who.href ? { href: who.href } : {}) },
            { text: eventWords(registry, item) },
            href ? { text: 'Open', href } : { text: '' },
          ],
        };
      });
      const params = new URLSearchParams();
      for (const key of ['person', 'kind', 'from', 'to'] as const) if (query[key]) params.set(key, query[key]!);
      const nextHref = page.next ? `${ACTIVITY_PAGE}?${new URLSearchParams([...params, ['after', page.next]])}` : null;
      const body = renderTemplate('./admin/pages/activity', {
        action: ACTIVITY_PAGE,
        people: await peopleChoices(ctx, query.person),
        kinds: kinds.map((k) => ({ value: k.event, label: k.label, selected: k.event === query.kind })),
        from: query.from && DAY.test(query.from) ? query.from : '',
        to: query.to && DAY.test(query.to) ? query.to : '',
        filtered: params.size > 0,
        table: {
          caption: 'What happened here, newest first',
          columns: [{ label: 'When' }, { label: 'Who' }, { label: 'What' }, { label: 'Record' }],
          rows,
          empty: params.size > 0 ? 'Nothing matches these filters.' : 'Nothing has happened here yet.',
        },
        pager: cursorPager(nextHref, { label: 'Older activity' }),
      });
      return ctx.render({ title: 'Activity', body });
    },
  });
}

/** The person filter's choices: the tenant's people the caller may read (through the people list route), else none. */
async function peopleChoices(ctx: AdminPageContext, selected: string | undefined): Promise<Choice[]> {
  const registry = ctx.services.registry;
  const people = registry.entities.find((e) => e.names.table === 'users' && !e.singleton);
  if (!people) return [];
  const found = apiRoute(ctx.services, people.names.operationId('list'));
  const list = found && found.transaction !== 'none' ? (found as RouteDefinition) : undefined;
  if (!list || !ctx.can(list.access)) return [];
  const title = people.def.admin?.title ?? people.fields[0] ?? 'id';
  const sort = people.sortable.includes(title) ? title : 'createdAt';
  const page = (await runApiRoute(list, ctx, { query: { limit: PEOPLE_OFFERED, offset: 0, sort } })) as {
    items: Record<string, unknown>[];
  };
  return page.items.map((row) => ({
    value: String(row.id),
    label: String(row[title] ?? row.id),
    selected: row.id === selected,
  }));
}
