import Type from 'typebox';
import type { AnyRoute, ModuleDefinition } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { TxContext } from '../context/tx.ts';
import type { ActorKind } from '../context/actor.ts';
import { named } from '../openapi/schema-name.ts';
import { pageSchema, type ListFilter, type Page } from '../operations/paging.ts';
import { resourceEvents } from '../catalog/catalog.ts';
import { ACTOR_FILTERS, ActorSchema } from '../history/history-schemas.ts';
import { StringEnum } from '../entity/string-enum.ts';
import type { ListQuery } from '../query/parse.ts';
import { QueryList } from '../query/query-list.ts';
import { pagedExport } from '../bulk/list-export/list-columns.ts';
import { selectAnswer } from '../query/expansion.ts';
import { answer } from '../http/entity-route-parts.ts';

/** The permission the tenant's activity needs: declared by the framework, held by an admin through `*`. */
export const AUDIT_READ = 'audit:read';

/** An event of the tenant's audit trail, as the activity list answers it. */
export interface ActivityItem {
  id: string;
  at: Date;
  event: string;
  actor: { kind: ActorKind; userId: string | null; name: string | null };
  entity: string | null;
  entityId: string | null;
  data: Record<string, unknown>;
}

interface AuditRow {
  event_id: string;
  occurred_at: Date;
  name: string;
  actor_id: string | null;
  actor_kind: ActorKind | null;
  actor_name: string | null;
  payload: Record<string, unknown>;
}

export const ActivitySchema = named(
  Type.Object(
    {
      id: Type.String({ format: 'uuid', description: 'The event’s id.' }),
      at: Type.String({ format: 'date-time', description: 'When it happened (its transaction’s time).' }),
      event: Type.String({ description: 'The event’s name, e.g. task.task.updated, user.invited, tenant.suspended.' }),
      actor: ActorSchema,
      entity: Type.Union([Type.String(), Type.Null()], {
        description: 'The resource it concerns (<module>.<entity>, as the catalog keys it), when it concerns one.',
      }),
      entityId: Type.Union([Type.String(), Type.Null()], {
        description: 'The id it concerns (the payload’s id): a row of that resource, or for a tenant event the tenant.',
      }),
      data: Type.Record(Type.String(), Type.Unknown(), {
        description: 'The event’s payload: ids and plain values, never an address, a message body or a link.',
      }),
    },
    { additionalProperties: false, description: 'One event of the tenant.' },
  ),
  'Activity',
);

/**
 * Which resource each event concerns, decided at boot from the declarations: an entity's own
 * lifecycle events; an event its commands or hooks publish under its module's name (task.assigned);
 * else a module's event when the module has one entity (user.invited). Others concern none.
 */
export function eventEntities(
  modules: readonly ModuleDefinition[],
  entities: readonly ResolvedEntity[],
): Map<string, string> {
  const map = new Map<string, string>();
  for (const entity of entities) for (const name of Object.values(entity.names.events)) map.set(name, entity.names.key);
  for (const entity of entities) {
    for (const name of resourceEvents(entity)) {
      if (!map.has(name) && name.startsWith(`${entity.module}.`)) map.set(name, entity.names.key);
    }
  }
  for (const module of modules) {
    const own = entities.filter((e) => e.module === module.name);
    if (own.length !== 1) continue;
    for (const name of module.events ?? []) if (!map.has(name)) map.set(name, own[0]!.names.key);
  }
  return map;
}

/** What the admin shell's Activity page narrows the list to, besides the query it passes. */
export interface ActivityFilter {
  actorId?: string;
  events?: readonly string[];
  from?: Date;
  to?: Date;
}

const literal = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** The resource an event concerns, as SQL over its name: the map decided at boot, as a CASE. */
function entityColumn(entities: ReadonlyMap<string, string>): string {
  if (entities.size === 0) return 'null::text';
  const whens = [...entities].map(([event, key]) => `when ${literal(event)} then ${literal(key)}`);
  return `(case a.name ${whens.join(' ')} end)`;
}

/**
 * The tenant's activity: its audit trail (framework/events/audit.ts, written by the relay once an
 * event's transaction has committed), newest first, paged, sorted and filtered like every list
 * (the query language's QueryList: by time, event, the resource and id it concerns, and actor),
 * read from the index audit_events_by_time (tenant, time, event id). Row-level security keeps it
 * to the tenant.
 */
export class TenantActivity {
  readonly list: QueryList;
  private readonly entities: ReadonlyMap<string, string>;

  constructor(entities: ReadonlyMap<string, string>) {
    this.entities = entities;
    const keys = [...new Set(entities.values())].sort();
    this.list = new QueryList({
      label: 'activity',
      item: ActivitySchema,
      select: 'a.event_id, a.occurred_at, a.name, a.actor_id, a.actor_kind, a.actor_name, a.payload',
      from: 'audit_events a',
      id: 'a.event_id',
      columns: {
        at: 'a.occurred_at',
        event: 'a.name',
        entity: entityColumn(entities),
        entityId: "(a.payload ->> 'id')",
        // Rows written before the actor's kind was recorded: a user when one is named, else the system.
        'actor.kind': "coalesce(a.actor_kind, case when a.actor_id is null then 'system' else 'user' end)",
        'actor.userId': 'a.actor_id',
        'actor.name': 'a.actor_name',
      },
      schemas: {
        ...ACTOR_FILTERS,
        // The resources events concern, by name: a refusal lists them.
        ...(keys.length > 0 ? { entity: Type.Union([StringEnum(keys), Type.Null()]) } : {}),
      },
      indexed: ['at'],
      defaultSort: '-at',
      sortDescription: '-at (the default): newest first; at: oldest first. Ties break on the event id.',
    });
  }

  /** A page of the tenant's events as the query asks, narrowed further by `filter`; with the query as parsed. */
  async page(
    ctx: TxContext,
    query: object,
    filter: ActivityFilter = {},
  ): Promise<{ page: Page<ActivityItem>; asked: ListQuery }> {
    const { page, asked } = await this.list.page(ctx, query as Record<string, unknown>, listFilter(filter));
    return { page: { ...page, items: page.items.map((r) => this.item(r as unknown as AuditRow)) }, asked };
  }

  private item(row: AuditRow): ActivityItem {
    const entity = this.entities.get(row.name) ?? null;
    const id = row.payload?.id;
    return {
      id: row.event_id,
      at: row.occurred_at,
      event: row.name,
      // Rows written before the actor's kind was recorded: a user when one is named, else the system.
      actor: { kind: row.actor_kind ?? (row.actor_id ? 'user' : 'system'), userId: row.actor_id, name: row.actor_name },
      entity,
      entityId: typeof id === 'string' ? id : null,
      data: row.payload ?? {},
    };
  }
}

/** The conditions of an ActivityFilter, as fixed texts (the values are parameters). */
function listFilter(filter: ActivityFilter): ListFilter {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const add = (condition: (n: number) => string, value: unknown) => {
    params.push(value);
    conditions.push(condition(params.length));
  };
  if (filter.actorId !== undefined) add((n) => `a.actor_id = $${n}::uuid`, filter.actorId);
  if (filter.events !== undefined && filter.events.length > 0)
    add((n) => `a.name = any($${n}::text[])`, [...filter.events]);
  if (filter.from !== undefined) add((n) => `a.occurred_at >= $${n}::timestamptz`, filter.from);
  if (filter.to !== undefined) add((n) => `a.occurred_at < $${n}::timestamptz`, filter.to);
  return { conditions, params };
}

/** Where the API lists the tenant's activity (and exports it, ?format=csv). */
export const ACTIVITY_PATH = '/api/v1/audit/activity';

/** GET /api/v1/audit/activity: the tenant's events, with audit:read. */
export function activityRoute(activity: TenantActivity): AnyRoute {
  return {
    method: 'GET',
    url: ACTIVITY_PATH,
    operationId: 'audit-activity-list',
    summary: 'The tenant’s activity',
    description:
      'Every event of the tenant once its transaction has committed (the audit trail): when, who acted, the event’s name, and the resource and id it concerns. Newest first, paged, sorted and filtered like every list (docs/api-conventions.md, "Filters"): by time (at=gte.now-7d), event name (event=eq.task.task.updated, event=startsWith.tenant.), the resource and id it concerns (entity=eq.task.task, entityId=eq.<id>) and actor (actor.userId=eq.<id>, actor.kind=eq.operator), with limit and offset, or after=<next>. The operator’s actions on this tenant (a suspension, a resumption, a host added or removed, an administrator invited) appear as done by the operator, naming none of the operator’s people. Payloads never carry an address, a message body or a link.',
    tags: ['audit'],
    access: { permission: AUDIT_READ },
    schema: {
      querystring: activity.list.querySchema,
      response: { 200: answer(pageSchema(ActivitySchema), 'A page of the tenant’s events') },
    },
    // Every matching event as CSV or NDJSON (docs/api-conventions.md, "Exports").
    exports: pagedExport('activity', ActivitySchema, '-at', (tx, query) => activity.page(tx, query)),
    handler: async ({ tx, query, reply }) => {
      const { page, asked } = await activity.page(tx, query as object);
      return selectAnswer(reply, page, asked);
    },
  };
}

const activities = new WeakMap<object, TenantActivity>();

/** The installation's activity reader, made once from its declarations (the API route and the admin page share it). */
export function activityOf(registry: {
  readonly modules: readonly ModuleDefinition[];
  readonly entities: readonly ResolvedEntity[];
}): TenantActivity {
  let activity = activities.get(registry);
  if (!activity) {
    activity = new TenantActivity(eventEntities(registry.modules, registry.entities));
    activities.set(registry, activity);
  }
  return activity;
}
