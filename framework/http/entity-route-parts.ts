import { statesProblem } from '../operations/command-states.ts';
import Type, { type TSchema } from 'typebox';
import type { FastifyReply } from 'fastify';
import type { AnyRoute, NoTxRouteDefinition, OneExchange, RouteDefinition } from '../entity/define.ts';
import type { ListQuery } from '../query/parse.ts';
import { selectAnswer } from '../query/expansion.ts';
import { clearable, type ResolvedEntity } from '../entity/resolve.ts';
import type { TxContext } from '../context/tx.ts';
import type { EntityOperations } from '../operations/entity-ops.ts';
import { named, nameOf } from '../openapi/schema-name.ts';

/** What the generic and singleton routes share: answers, the afterRead shaping, command routes. */

export const NoContent = Type.Null({ description: 'No content' });

/** The same schema, with the sentence OpenAPI shows for this answer. */
export const answer = (schema: TSchema, description: string): TSchema =>
  ({ ...schema, 'x-response-description': description }) as TSchema;

type Present = (tx: TxContext, row: Record<string, unknown>) => unknown;

/** Every row a route returns goes through afterRead when the entity declares it; otherwise as stored. */
export function presenter(entity: ResolvedEntity): Present {
  const afterRead = entity.def.hooks?.afterRead;
  if (!afterRead) return (_tx, row) => row;
  return (tx, row) => afterRead(tx, row as never);
}

/** A one-exchange statement whose answer is selected as `fields=` asks (framework/query/expansion.ts, selectAnswer). */
export function selecting(
  exchange: OneExchange | undefined,
  reply: FastifyReply,
  query: ListQuery,
): OneExchange | undefined {
  if (!exchange || !query.select) return exchange;
  return { ...exchange, answer: async (rows, more) => selectAnswer(reply, await exchange.answer(rows, more), query) };
}

/** Lists' items, shaped one after another (a hook may query, on the request's one connection). */
export async function presentAll(present: Present, tx: TxContext, rows: Record<string, unknown>[]): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const row of rows) out.push(await present(tx, row));
  return out;
}

/**
 * Events a writing route may publish besides its own: the hooks' declared events, and the updated
 * event when afterWrite may return changes to store.
 */
export function followUpEvents(entity: ResolvedEntity): string[] {
  const events = [...(entity.def.hookPublishes ?? [])];
  if (entity.def.hooks?.afterWrite) events.push(entity.names.events.updated);
  return events;
}

/** One route per command: POST <item>/<command>, on the row by id or, for a singleton, the tenant's row. */
export function commandRoutes(entity: ResolvedEntity, ops: EntityOperations, present: Present): AnyRoute[] {
  const { names, schemas, def } = entity;
  const followUp = followUpEvents(entity);
  return Object.entries(def.commands ?? {}).map(([command, definition]): AnyRoute => {
    const base = {
      method: 'POST' as const,
      url: entity.singleton ? `${names.path}/${command}` : `${names.path}/:id/${command}`,
      operationId: names.operationId(command),
      summary: definition.summary,
      description: sentences(
        definition.description,
        entity.singleton
          ? `Before the ${names.label.toLowerCase()} exists, the command may create it; if it does not, 404 NOT_FOUND.`
          : undefined,
        visibility(entity),
      ),
      tags: [def.module],
      access: { permission: definition.permission ?? def.permissions.write },
      ...(definition.feature ? { feature: definition.feature } : {}),
      ...(definition.bearer === false ? { bearer: false as const } : {}),
      ...(problemsOf(definition.problems, statesProblem(entity, command)) ?? {}),
      // A singleton's command may create the row, which publishes its created event.
      publishes: [
        ...new Set([...(definition.publishes ?? []), ...(entity.singleton ? [names.events.created] : []), ...followUp]),
      ],
      schema: {
        ...(entity.singleton ? {} : { params: schemas.idParams }),
        // A command's body is <Entity><Command> in the document (TaskAssign), unless it has a name of its own.
        ...(definition.body
          ? { body: nameOf(definition.body) ? definition.body : named(definition.body, names.schemas.command(command)) }
          : {}),
        response: { 200: answer(schemas.row, `The ${names.label.toLowerCase()} after the command`) },
      },
    };
    const idOf = (params: unknown) => (entity.singleton ? null : (params as { id: string }).id);
    const prepare = definition.prepare;
    if (prepare && definition.beforeTransaction)
      throw new Error(`${def.module}.${def.name}'s command ${command} declares both prepare and beforeTransaction`);
    if (prepare) {
      // Prepared with no transaction open (it opens its own), then the command's own transaction.
      const route: NoTxRouteDefinition = {
        ...base,
        transaction: 'none',
        idempotent: true,
        handler: async ({ params, body, services, session, request, transaction, effectTransaction }) => {
          const ctx = { services, tenant: request.tenant!, session, now: services.clock.now(), transaction };
          const prepared = await prepare(ctx, body ?? {});
          // The key (if any) commits with the command's effect; a retry was replayed before prepare.
          return effectTransaction(async (tx) =>
            present(tx, await ops.runCommand(tx, idOf(params), command, body ?? {}, services, prepared)),
          );
        },
      };
      return route;
    }
    const step = definition.beforeTransaction;
    if (step) {
      // Done with no transaction open once the caller is guarded (http/request-strategies.ts), on
      // every path that runs this route: alone, in a batch, from the admin form.
      const route: RouteDefinition = {
        ...base,
        idempotent: true,
        beforeTransaction: ({ body, services }) => step(body ?? {}, services),
        handler: async ({ tx, params, body, services, prepared }) =>
          present(tx, await ops.runCommand(tx, idOf(params), command, body ?? {}, services, prepared)),
      };
      return route;
    }
    const route: RouteDefinition = {
      ...base,
      idempotent: true,
      handler: async ({ tx, params, body, services }) =>
        present(tx, await ops.runCommand(tx, idOf(params), command, body ?? {}, services)),
    };
    return route;
  });
}

/** What a DELETE does, for OpenAPI: soft or hard, and whether a hook may refuse it. */
export function deleteDescription(entity: ResolvedEntity): string {
  const what =
    entity.deleteMode === 'hard'
      ? 'Hard delete: the row is removed; the deleted event is still published.'
      : 'Soft delete: the row is kept but no longer listed, read, updated or commanded; its unique keys are released.';
  return entity.def.hooks?.beforeDelete
    ? `${what} The entity may refuse (a problem naming why) while the row is still in use.`
    : what;
}

/** What a PATCH may clear, for OpenAPI: the optional fields without a default, which take null. */
export function clearing(entity: ResolvedEntity): string | undefined {
  const fields = entity.patchable.filter((field) => clearable(entity.def.fields[field]!));
  if (fields.length === 0) return undefined;
  return `${fields.join(', ')} may be sent as null, which clears ${fields.length > 1 ? 'them' : 'it'} (a read then answers null).`;
}

/** Who sees which rows, for OpenAPI: a global entity's and a row-access filter's rule, or nothing. */
export function visibility(entity: ResolvedEntity): string {
  const parts: string[] = [];
  if (entity.scope === 'global')
    parts.push('Global: every tenant reads the same rows; only the operator tenant writes them.');
  if (entity.def.rowAccess)
    parts.push("Only the rows the caller may see (row access): another caller's row answers 404, like an unknown id.");
  return parts.join(' ');
}

/** A command's declared problems, its states' 409 joined to any 409 it declares itself. */
function problemsOf(
  declared: Readonly<Record<number, string>> | undefined,
  states: string | undefined,
): { problems: Readonly<Record<number, string>> } | undefined {
  if (!states) return declared ? { problems: declared } : undefined;
  return { problems: { ...declared, 409: declared?.[409] ? `${declared[409]}; or ${states}` : states } };
}

/** A description made of sentences, any of which may be empty; undefined when all are. */
export const sentences = (...parts: (string | undefined)[]): string | undefined =>
  parts.filter((p) => p).join(' ') || undefined;
