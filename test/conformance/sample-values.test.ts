import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import Value from 'typebox/value';
import { checkedSample, sampleValue } from '../helpers/samples/values.ts';

describe('sample values for the conformance suite', () => {
  it('honour string length, formats and patterns', () => {
    expect(sampleValue(Type.String({ minLength: 40 }), 1)).toHaveLength(40);
    expect((sampleValue(Type.String({ maxLength: 3 }), 1) as string).length).toBeLessThanOrEqual(3);
    for (const format of ['uuid', 'date-time', 'date', 'email', 'uri', 'hostname']) {
      const schema = Type.String({ format });
      expect(Value.Check(schema, sampleValue(schema, 1)), format).toBe(true);
    }
    const slug = Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' });
    expect(sampleValue(slug, 2)).toMatch(/^[a-z0-9][a-z0-9-]{0,62}$/);
    expect(() => sampleValue(Type.String({ pattern: '^Q{5}$' }), 1)).toThrow(/give the field examples/);
  });

  it('honour enums, literals, unions, numeric bounds and examples', () => {
    expect(sampleValue(Type.Union([Type.Literal('low'), Type.Literal('high')]), 3)).toBe('low');
    expect(sampleValue(Type.Enum(['month', 'year']), 3)).toBe('month');
    expect(sampleValue(Type.Union([Type.Null(), Type.Integer({ minimum: 5 })]), 0)).toBe(5);
    expect(sampleValue(Type.Integer({ minimum: 10, maximum: 12 }), 7)).toBeGreaterThanOrEqual(10);
    expect(sampleValue(Type.Integer({ minimum: 10, maximum: 12 }), 7)).toBeLessThanOrEqual(12);
    expect(sampleValue(Type.Integer({ exclusiveMinimum: 0, multipleOf: 5 }), 0)).toBe(5);
    expect(sampleValue(Type.String({ examples: ['EUR', 'USD'] }), 1)).toBe('USD');
  });

  it('vary between calls, so unique keys stay unique', () => {
    const schema = Type.String({ minLength: 1, maxLength: 30 });
    expect(sampleValue(schema, 1)).not.toBe(sampleValue(schema, 1));
    const email = Type.String({ format: 'email' });
    expect(sampleValue(email, 1)).not.toBe(sampleValue(email, 2));
  });

  it('fill arrays and objects, optional properties included, and the result passes the schema', () => {
    const schema = Type.Object(
      {
        name: Type.String({ minLength: 1 }),
        tags: Type.Array(Type.String({ minLength: 2 }), { minItems: 2, uniqueItems: true }),
        note: Type.Optional(Type.String()),
        nested: Type.Object({ on: Type.Boolean() }),
      },
      { additionalProperties: false },
    );
    const value = checkedSample(schema, 4, 'body') as Record<string, unknown>;
    expect(Object.keys(value).sort()).toEqual(['name', 'nested', 'note', 'tags']);
    expect(value.tags).toHaveLength(2);
  });
});
