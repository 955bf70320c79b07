import { describe, expect, it } from 'vitest';
import { compareDocuments, type Change } from '../../scripts/openapi/compatibility.ts';

type Json = Record<string, unknown>;
const json = (schema: unknown) => ({ content: { 'application/json': { schema } } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/** A small document: one list, one create, with a Thing. */
function api(
  change: (d: { thing: Json; create: Json; params: Json[]; responses: Json; paths: Json }) => void = () => {},
): Json {
  const thing: Json = {
    type: 'object',
    required: ['id', 'status', 'size'],
    properties: {
      id: { type: 'string' },
      status: { type: 'string', enum: ['open', 'closed'] },
      size: { type: 'integer' },
      note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    },
  };
  const create: Json = {
    type: 'object',
    additionalProperties: false,
    required: ['size'],
    properties: { size: { type: 'integer' }, status: { type: 'string', enum: ['open', 'closed'] } },
  };
  const params: Json[] = [{ in: 'query', name: 'limit', required: false, schema: { type: 'integer' } }];
  const responses: Json = { 201: { description: 'Made', ...json(ref('Thing')) }, 422: { description: 'Bad' } };
  const paths: Json = {
    '/things': {
      get: {
        operationId: 'list',
        parameters: params,
        responses: {
          200: {
            description: 'Page',
            ...json({ type: 'object', properties: { items: { type: 'array', items: ref('Thing') } } }),
          },
        },
      },
      post: { operationId: 'create', requestBody: { required: true, ...json(ref('ThingCreate')) }, responses },
    },
  };
  change({ thing, create, params, responses, paths });
  return { openapi: '3.1.0', paths, components: { schemas: { Thing: thing, ThingCreate: create } } };
}

const breaking = (changes: Change[]) => changes.filter((c) => c.breaking).map((c) => `${c.at}: ${c.what}`);

describe('the OpenAPI compatibility checker', () => {
  it('finds nothing between a document and itself', () => {
    expect(compareDocuments(api(), api())).toEqual([]);
  });

  it('calls a removed operation breaking, an added one compatible', () => {
    const removed = api(({ paths }) => delete (paths['/things'] as Json).get);
    expect(breaking(compareDocuments(api(), removed))).toEqual(['GET /things: removed operation']);
    const added = compareDocuments(removed, api());
    expect(breaking(added)).toEqual([]);
    expect(added.map((c) => c.what)).toEqual(['new operation']);
  });

  it('calls a removed response field breaking, wherever the schema is used, and a field no longer always present', () => {
    const changes = compareDocuments(
      api(),
      api(({ thing }) => delete (thing.properties as Json).size),
    );
    expect(breaking(changes)).toEqual([
      'GET /things 200.items[].size: removed response field',
      'POST /things 201.size: removed response field',
    ]);
    const optional = compareDocuments(
      api(),
      api(({ thing }) => (thing.required = ['id', 'status'])),
    );
    expect(breaking(optional)).toContain('POST /things 201.size: response field no longer always present');
    // A new response field breaks nobody.
    const added = compareDocuments(
      api(),
      api(({ thing }) => ((thing.properties as Json).extra = { type: 'string' })),
    );
    expect(breaking(added)).toEqual([]);
    expect(added.length).toBeGreaterThan(0);
  });

  it('calls a new required request field or parameter breaking, a new optional one compatible', () => {
    const required = api(({ create }) => {
      (create.properties as Json).colour = { type: 'string' };
      create.required = ['size', 'colour'];
    });
    expect(breaking(compareDocuments(api(), required))).toEqual([
      'POST /things body.colour: new required request field',
    ]);
    const nowRequired = api(({ create }) => (create.required = ['size', 'status']));
    expect(breaking(compareDocuments(api(), nowRequired))).toEqual([
      'POST /things body.status: request field now required',
    ]);
    const param = api(({ params }) =>
      params.push({ in: 'query', name: 'q', required: true, schema: { type: 'string' } }),
    );
    expect(breaking(compareDocuments(api(), param))).toEqual(['GET /things query q: new required parameter']);
    const optional = api(({ create }) => ((create.properties as Json).colour = { type: 'string' }));
    expect(breaking(compareDocuments(api(), optional))).toEqual([]);
  });

  it('calls a narrowed type or enum breaking, a widened request type compatible', () => {
    const narrowedEnum = api(({ create }) => ((create.properties as Json).status = { type: 'string', enum: ['open'] }));
    expect(breaking(compareDocuments(api(), narrowedEnum))).toEqual([
      'POST /things body.status: narrowed enum: "closed" no longer accepted',
    ]);
    const narrowedType = api(({ thing }) => ((thing.properties as Json).note = { type: 'string' }));
    expect(breaking(compareDocuments(api(), narrowedType))).toEqual(
      expect.arrayContaining(['POST /things 201.note: narrowed type: string|null → string']),
    );
    const changedType = api(({ create }) => ((create.properties as Json).size = { type: 'string' }));
    expect(breaking(compareDocuments(api(), changedType))).toEqual([
      'POST /things body.size: narrowed type: integer → string',
    ]);
    const widened = api(({ create }) => ((create.properties as Json).size = { type: 'number' }));
    expect(breaking(compareDocuments(api(), widened))).toEqual([]);
    expect(compareDocuments(api(), widened)).toHaveLength(1);
  });

  it('reads an enum without a type as the type of its values: a parameter of names that becomes a patterned string is no narrowing', () => {
    const named = api(({ params }) => params.push({ in: 'query', name: 'sort', schema: { enum: ['size', '-size'] } }));
    const patterned = api(({ params }) =>
      params.push({ in: 'query', name: 'sort', schema: { type: 'string', pattern: '^-?size(,-?size)*$' } }),
    );
    expect(breaking(compareDocuments(named, patterned))).toEqual([]);
    const numbers = api(({ params }) => params.push({ in: 'query', name: 'sort', schema: { enum: [1, 2] } }));
    expect(breaking(compareDocuments(numbers, patterned))).toEqual([
      'GET /things query sort: narrowed type: integer → string',
    ]);
  });

  it('calls the same values written as one enum instead of a union of single values compatible, and says so', () => {
    const union = {
      anyOf: [
        { type: 'string', enum: ['open'] },
        { type: 'string', enum: ['closed'] },
      ],
    };
    const asUnion = api(({ create, thing }) => {
      (create.properties as Json).status = union;
      (thing.properties as Json).status = union;
    });
    const changes = compareDocuments(asUnion, api());
    expect(breaking(changes)).toEqual([]);
    expect(changes).toEqual(
      expect.arrayContaining([
        {
          breaking: false,
          at: 'POST /things body.status',
          what: 'equivalent enum: the same values, now one enum of type string',
        },
        {
          breaking: false,
          at: 'POST /things 201.status',
          what: 'equivalent enum: the same values, now one enum of type string',
        },
      ]),
    );
    // An enum that states its type now, with the same values, narrows nothing either.
    const untyped = api(({ create }) => ((create.properties as Json).status = { enum: ['open', 'closed'] }));
    expect(breaking(compareDocuments(untyped, api()))).toEqual([]);
    // A value lost on the way is still breaking.
    const fewer = api(({ create }) => ((create.properties as Json).status = { type: 'string', enum: ['open'] }));
    expect(breaking(compareDocuments(asUnion, fewer))).toEqual([
      'POST /things body.status: narrowed enum: "closed" no longer accepted',
    ]);
  });

  it('calls a changed success status code breaking, a new error answer compatible', () => {
    const changed = api(({ responses }) => {
      responses[200] = responses[201];
      delete responses[201];
    });
    expect(breaking(compareDocuments(api(), changed))).toEqual(['POST /things: changed status code: 201 → 200']);
    const newError = compareDocuments(
      api(),
      api(({ responses }) => (responses[409] = { description: 'Conflict' })),
    );
    expect(newError).toEqual([{ breaking: false, at: 'POST /things 409', what: 'new error answer' }]);
  });

  it('calls a field removed from a closed request body, or a removed parameter, breaking: a client still sending it is refused', () => {
    const removed = api(({ create }) => delete (create.properties as Json).status);
    expect(breaking(compareDocuments(api(), removed))).toEqual(['POST /things body.status: removed request field']);
    const removedParam = api(({ params }) => params.pop());
    expect(breaking(compareDocuments(api(), removedParam))).toEqual(['GET /things query limit: removed parameter']);
  });
});
