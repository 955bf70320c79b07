import type { AnyRoute } from '../entity/define.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import type { TxContext } from '../context/tx.ts';
import type { EntityOperations } from '../operations/entity-ops.ts';
import type { PageQuery } from '../operations/paging.ts';
import { selectAnswer } from '../query/expansion.ts';
import { answer, followUpEvents, sentences, visibility } from '../http/entity-route-parts.ts';
import { RestoreBody, RevisionPage, RevisionSchema, restoredSchema } from './history-schemas.ts';
import { pagedExport } from '../bulk/list-export/list-columns.ts';

type Present = (tx: TxContext, row: Record<string, unknown>) => unknown;

/** Whether the entity serves a restore: a collection always, a singleton only with its PATCH. */
export const restores = (entity: ResolvedEntity): boolean =>
  !entity.singleton || (entity.def.singletonRoutes ?? []).includes('update');

/**
 * The history routes of an entity that keeps history: GET <item>/history (read permission) and
 * POST <item>/restore (write permission), where <item> is `<path>/{id}`, or a singleton's path.
 */
export function historyRoutes(entity: ResolvedEntity, ops: EntityOperations, present: Present): AnyRoute[] {
  if (!ops.history) return [];
  const { names, schemas, def } = entity;
  const label = names.label.toLowerCase();
  const item = entity.singleton ? names.path : `${names.path}/:id`;
  const params = entity.singleton ? {} : { params: schemas.idParams };
  const idOf = (p: unknown) => (entity.singleton ? null : (p as { id: string }).id);
  const tags = [def.module];
  const unrecorded = ops.history.plan.unrecorded;
  const list = ops.recordHistory!.list;
  const routes: AnyRoute[] = [
    {
      method: 'GET',
      url: `${item}/history`,
      operationId: names.operationId('history'),
      summary: `History of the ${label}`,
      description: sentences(
        `Every create, update, delete, restore and command of the ${label}, newest first: when, who (actor), the operation and each changed field's old and new value. Paged, sorted and filtered like every list (docs/api-conventions.md, "Filters"): by time (at=gte.now-7d), operation (operation=in.(update,restore)) and actor (actor.userId=eq.<id>, actor.kind=eq.token, actor.name=eq.<token or job name>), with limit and offset, or after=<next>. Readable for a deleted ${label} too. A field the read route does not show never appears${unrecorded.length ? `; ${unrecorded.join(', ')} ${unrecorded.length === 1 ? 'is' : 'are'} not recorded` : ''}. Revisions older than history.retention_days are removed.`,
        visibility(entity),
      ),
      tags,
      access: { permission: def.permissions.read },
      schema: {
        ...params,
        querystring: list.querySchema,
        response: { 200: answer(RevisionPage, `A page of the ${label}'s revisions`) },
      },
      // The record's every matching revision as CSV or NDJSON (docs/api-conventions.md, "Exports").
      exports: pagedExport(`${names.plural}-history`, RevisionSchema, '-at', (tx, query, p) =>
        ops.historyPage(tx, idOf(p), query as PageQuery & Record<string, unknown>),
      ),
      handler: async ({ tx, params: p, query, reply }) => {
        const { page, asked } = await ops.historyPage(tx, idOf(p), query as PageQuery & Record<string, unknown>);
        return selectAnswer(reply, page, asked);
      },
    },
  ];
  if (restores(entity)) {
    routes.push({
      method: 'POST',
      url: `${item}/restore`,
      operationId: names.operationId('restore'),
      summary: `Restore the ${label} as it was after a revision`,
      description: sentences(
        `Sets the ${label}'s writable fields to their values right after the revision named in the body, through the same path as a PATCH: the same validation and rules, the updated event, and a new revision whose operation is restore. Command-owned, immutable and read-only fields, and the state field, are left as they are: the answer's kept names each one that held another value then. A deleted ${label} comes back to life. A unique value another ${label} took meanwhile is 409, naming the field. Restoring to the values it already has changes nothing and publishes nothing. A revision that is not one of this ${label}'s is 422 VALIDATION_FAILED.`,
        visibility(entity),
      ),
      tags,
      access: { permission: def.permissions.write },
      publishes: [...new Set([names.events.updated, ...followUpEvents(entity)])],
      idempotent: true,
      problems: {
        409: 'A unique value another row took meanwhile (ALREADY_EXISTS, or the field’s own code, naming the field), or a value the entity’s rules refuse now',
        422: 'The revision is not one of this record’s (VALIDATION_FAILED)',
      },
      schema: {
        ...params,
        body: RestoreBody,
        response: {
          200: answer(
            restoredSchema(schemas.row, `${names.schemas.read}Restored`),
            `The ${label} after the restore, with what was set back and what was left as it is`,
          ),
        },
      },
      handler: async ({ tx, params: p, body }) => {
        const outcome = await ops.restore(tx, idOf(p), (body as { revision: string }).revision);
        return { ...outcome, row: await present(tx, outcome.row) };
      },
    });
  }
  return routes;
}
