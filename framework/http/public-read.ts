import Type, { type TProperties, type TSchema } from 'typebox';
import { CompiledQuery } from 'kysely';
import type { EntityRow, NoTxRouteDefinition, PublicReadDefinition } from '../entity/define.ts';
import type { TxContext } from '../context/tx.ts';
import type { ResolvedEntity } from '../entity/resolve.ts';
import { API_PREFIX } from '../entity/names.ts';
import { prepared } from '../db/statements.ts';
import { Compile } from 'typebox/compile';
import { notFound, problem } from '../errors.ts';
import { ifNoneMatchHits, notModified, weakETag } from './etag.ts';

export const PUBLIC_READ_VERB = 'public-read';

type Row = EntityRow<TProperties>;

const quote = (identifier: string): string => `"${identifier.replaceAll('"', '""')}"`;

/** The public read's path, e.g. /api/v1/content/public/{slug}, in fastify's form. */
export const publicReadUrl = (entity: ResolvedEntity, spec: PublicReadDefinition<TProperties>): string =>
  `${API_PREFIX}/${entity.module}/${spec.path ?? 'public'}/:${spec.by}`;

/** What the JSON read and its HTML page share: the parameter's check, the lookup and the ETag. */
export interface PublicLookup {
  spec: PublicReadDefinition<TProperties>;
  /** The path value in its stored form; a value outside the field's rules throws its 422. */
  normalise(raw: string): string;
  /** The public row with that value, or undefined (unknown, deleted, not public). */
  find(tx: TxContext, value: string): Promise<Row | undefined>;
  etagOf(row: Row): Date | string;
  /** The parameter's schema as the route declares it. */
  routeParam: TSchema;
}

/** The lookup of an entity's declared public read, or undefined when it declares none. */
export function publicLookup(
  entity: ResolvedEntity,
  toRow: (values: Record<string, unknown>) => Row,
): PublicLookup | undefined {
  const spec = entity.def.publicRead;
  if (!spec) return undefined;
  const { names } = entity;
  const column = (field: string) => quote(entity.columns[field] ?? field);
  const where = Object.entries(spec.where ?? {});
  const selectList = ['id', 'created_at', 'updated_at', ...entity.fields.map((f) => entity.columns[f]!)]
    .map(quote)
    .join(', ');
  // A soft-deleted row is not there; a hard-delete entity's table has no deleted_at (its rows go).
  const live = entity.deleteMode === 'hard' ? '' : ' and deleted_at is null';
  const text = prepared(
    `select ${selectList} from ${quote(names.table)} where ${column(spec.by)} = $1${live}` +
      where.map(([field], i) => ` and ${column(field)} = $${i + 2}`).join('') +
      ' limit 1',
  );
  const whereValues = where.map(([, value]) => value);
  const normaliser = spec.normalise ?? entity.def.normalise?.[spec.by];
  const param = spec.param ?? entity.def.fields[spec.by]!;
  // A normalised field is checked in its stored form: the path takes any text, and the value,
  // once normalised, must meet the parameter's schema (answering the field's own code if it has one).
  const checkStored = normaliser ? Compile(param) : undefined;
  const invalidCode = entity.def.invalidCodes?.[spec.by] ?? 'VALIDATION_FAILED';
  return {
    spec,
    normalise: (raw) => {
      if (!normaliser || !checkStored) return raw;
      const value = normaliser(raw);
      if (checkStored.Check(value)) return value;
      const message = [...checkStored.Errors(value)][0]?.message ?? 'invalid';
      throw problem(invalidCode, `The request params do not match the schema`, {
        errors: [{ pointer: `/params/${spec.by}`, message }],
      });
    },
    find: async (tx, value) => {
      const found = await tx.db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, [value, ...whereValues]));
      return found.rows[0] ? toRow(found.rows[0]) : undefined;
    },
    etagOf: spec.etag ?? ((row: Row) => row.updatedAt),
    routeParam: normaliser
      ? Type.String({
          description: `Any text: normalised the way ${spec.by} is stored, then it must meet ${spec.by}'s rules (422 otherwise)`,
        })
      : param,
  };
}

/**
 * The conditional GET both doors answer before validation and the handler run: the value in its
 * stored form names a cached ETag that the If-None-Match names too. No transaction is opened
 * (framework/context/public-read-cache.ts).
 */
export function publicEarlyAnswer(
  entity: ResolvedEntity,
  lookup: PublicLookup,
): NonNullable<NoTxRouteDefinition['earlyAnswer']> {
  const { spec } = lookup;
  return ({ method, headers, params, tenant }, services) => {
    const wanted = headers['if-none-match'];
    if (wanted === undefined || (method !== 'GET' && method !== 'HEAD')) return undefined;
    const known = services.publicReads.etag(entity.names.table, tenant.id, lookup.normalise(params[spec.by]!));
    if (!known || !ifNoneMatchHits(wanted, known)) return undefined;
    const answer: Record<string, string> = { etag: known };
    if (spec.cacheControl) answer['cache-control'] = spec.cacheControl;
    return { status: 304, headers: answer };
  };
}

/**
 * The declared public read of an entity, as a plain route: anonymous, in the tenant of the host,
 * one prepared statement by the unique field, the public shape with a weak ETag, 304 when the
 * caller's copy is current. Rows that are deleted or fail `where` answer the unknown-value 404.
 */
export function publicReadRoute(
  entity: ResolvedEntity,
  toRow: (values: Record<string, unknown>) => Row,
): NoTxRouteDefinition | undefined {
  const lookup = publicLookup(entity, toRow);
  if (!lookup) return undefined;
  const { spec, normalise, routeParam } = lookup;
  const { names } = entity;
  const label = names.label.toLowerCase();

  return {
    method: 'GET',
    url: publicReadUrl(entity, spec),
    operationId: names.operationId(PUBLIC_READ_VERB),
    summary: spec.summary ?? `Read a public ${label} by ${spec.by}`,
    description:
      spec.description ??
      `Anybody may read it at the tenant's host. An unknown ${spec.by}, a deleted ${label} and one that is not public answer the same 404 NOT_FOUND; ` +
        `a ${spec.by} outside its grammar is 422 VALIDATION_FAILED. The answer carries a weak ETag; an If-None-Match naming it is 304 with no body.`,
    tags: [entity.module],
    access: 'public',
    schema: {
      params: Type.Object({ [spec.by]: routeParam }, { additionalProperties: false }),
      response: {
        200: { ...spec.schema, 'x-response-description': `The public ${label}` } as TSchema,
        304: Type.Null({ description: 'Not modified: the If-None-Match names the current ETag' }),
      },
    },
    // No transaction is opened for a conditional GET the validator cache answers: a current
    // If-None-Match is 304 without the database (framework/context/public-read-cache.ts).
    transaction: 'none',
    // Public content may be seconds old: read from the replica when there is one within its bound.
    replica: 'always',
    // The usual conditional GET, answered before validation and the handler run: the slug in its
    // stored form names a cached ETag that the If-None-Match names too.
    earlyAnswer: publicEarlyAnswer(entity, lookup),
    handler: async ({ params, request, reply, services, transaction }) => {
      const value = normalise(String((params as Record<string, unknown>)[spec.by]));
      // The host resolved to a tenant before any route runs (NO_SITE otherwise).
      const tenantId = request.tenant!.id;
      const cache = services.publicReads;
      if (spec.cacheControl) reply.header('cache-control', spec.cacheControl);
      // A current If-None-Match the cache knows was answered by earlyAnswer: ask the database.
      const generation = cache.current();
      return transaction(async (tx) => {
        const row = await lookup.find(tx, value);
        if (!row) throw notFound();
        const etag = weakETag(lookup.etagOf(row));
        // The cache holds current ETags only: a replica's row may be older than an eviction already heard.
        if (!tx.replica) cache.fill(names.table, tenantId, value, etag, generation);
        if (notModified(request, reply, etag)) return undefined;
        return spec.shape(row, tx);
      });
    },
  };
}
