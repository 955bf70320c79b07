import Type from 'typebox';
import Value from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { propertyDefaults, typeboxValidatorCompiler } from '../../framework/http/validation.ts';
import { QueryList } from '../../framework/query/query-list.ts';

/**
 * Rule: a query string that meets its schema once its defaults are in is answered by the compiled
 * check alone, the defaults found at boot; the answer is the one TypeBox's Convert and Default walk
 * gives, for every query, valid or not.
 */

const things = new QueryList({
  label: 'things',
  item: Type.Object({
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    size: Type.Integer(),
    createdAt: Type.String({ format: 'date-time' }),
  }),
  select: 'id, name, size, created_at',
  from: 'things',
  columns: { name: 'name', size: 'size', createdAt: 'created_at' },
  indexed: ['createdAt', 'name'],
  defaultSort: '-createdAt',
});

const validate = typeboxValidatorCompiler({
  schema: things.querySchema,
  httpPart: 'querystring',
  method: 'GET',
  url: '/things',
});

/** What the full path gives: the text converted, the defaults filled, then checked. */
function throughTypeBox(query: Record<string, unknown>): unknown {
  return Value.Default(things.querySchema, Value.Convert(things.querySchema, structuredClone(query)));
}

describe('query string defaults decided at boot', () => {
  it("finds a list's defaults as its properties' own: limit, offset and sort", () => {
    expect(propertyDefaults(things.querySchema)).toEqual([
      ['limit', 20],
      ['offset', 0],
      ['sort', '-createdAt'],
    ]);
  });

  it('leaves a default inside a property, or on the object, to the full walk', () => {
    const nested = Type.Object({ page: Type.Object({ size: Type.Integer({ default: 5 }) }) });
    expect(propertyDefaults(nested)).toBeUndefined();
    expect(propertyDefaults(Type.Object({}, { default: {} }))).toBeUndefined();
    expect(propertyDefaults(Type.Object({ a: Type.String() }))).toEqual([]);
  });

  it.each([
    {},
    { name: 'eq.box', sort: 'name,-createdAt' },
    { size: 'gte.3', createdAt: 'lt.now', fields: 'name' },
    { limit: '50', offset: '10' },
    { limit: '007', offset: '-0' },
    { limit: '100', sort: 'name', size: 'gt.2' },
    { name: ['eq.a', 'neq.b'] },
  ])('answers %j as the Convert and Default walk does', (query) => {
    const result = validate({ ...query }) as { value?: unknown; error?: unknown };
    expect(result.error).toBeUndefined();
    expect(result.value).toEqual(throughTypeBox(query));
  });

  it("answers a valid query without TypeBox's walks: a copy with the defaults, the parsed text untouched", () => {
    // TypeBox's Default fills the object it is given; the check alone leaves it as parsed.
    const query = { name: 'in.(a,b)', createdAt: 'lt.now', sort: '-name,createdAt', fields: 'name' };
    const result = validate(query) as { value: Record<string, unknown> };
    expect(query).toEqual({ name: 'in.(a,b)', createdAt: 'lt.now', sort: '-name,createdAt', fields: 'name' });
    expect(result.value).toEqual({ ...query, limit: 20, offset: 0 });
  });

  it("reads a limit and an offset written in decimal digits as their numbers, without TypeBox's walks", () => {
    // TypeBox's Convert and Default change the object they are given; the check alone leaves it as parsed.
    const query = { limit: '50', offset: '10', sort: 'name' };
    const result = validate(query) as { value: Record<string, unknown> };
    expect(result.value).toEqual({ limit: 50, offset: 10, sort: 'name' });
    expect(query).toEqual({ limit: '50', offset: '10', sort: 'name' });
  });

  it('leaves an integer in a union, and integer text the check refuses, to the full walk', () => {
    const schema = Type.Object({ n: Type.Union([Type.Integer(), Type.Literal('all')]) });
    const union = typeboxValidatorCompiler({ schema, httpPart: 'querystring', method: 'GET', url: '/union' });
    expect(union({ n: '7' })).toEqual({ value: Value.Convert(schema, { n: '7' }) });
    expect(union({ n: 'all' })).toEqual({ value: { n: 'all' } });
    for (const limit of ['0', '101', '99999999999999999999999', '1.5', '+1'])
      expect((validate({ limit }) as { error?: unknown[] }).error?.length, limit).toBeGreaterThan(0);
  });

  it('fills the defaults of each query afresh: one answer is not another', () => {
    const first = validate({ name: 'eq.a' }) as { value: Record<string, unknown> };
    const second = validate({ sort: 'name' }) as { value: Record<string, unknown> };
    expect(first.value).toEqual({ name: 'eq.a', limit: 20, offset: 0, sort: '-createdAt' });
    expect(second.value).toEqual({ sort: 'name', limit: 20, offset: 0 });
    first.value.limit = 99;
    expect((validate({}) as { value: Record<string, unknown> }).value.limit).toBe(20);
  });

  it('still refuses what the schema refuses: an unknown parameter, a bad sort, a non-decimal limit, NUL', () => {
    for (const query of [{ colour: 'eq.red' }, { sort: 'colour' }, { limit: '1e1' }, { name: 'eq.a\u0000' }]) {
      expect((validate({ ...query }) as { error?: unknown[] }).error?.length).toBeGreaterThan(0);
    }
  });
});
