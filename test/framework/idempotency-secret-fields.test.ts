import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { Secret } from '../../framework/entity/define.ts';
import { secretPaths, withholdSecrets } from '../../framework/http/withheld-secrets.ts';

// Any idempotent route's answer: the recorder reads the secret fields from its response schema.
const Answer = Type.Object({
  id: Type.String(),
  token: Secret(Type.Union([Type.String(), Type.Null()])),
  keys: Type.Array(Type.Object({ name: Type.String(), value: Secret(Type.String()) })),
  nested: Type.Union([Type.Object({ 'a/b': Secret(Type.String()) }), Type.Null()]),
});

describe('the secret fields of an answer, as the idempotency recorder withholds them', () => {
  it('finds the fields a response schema marks with Secret(): through properties, array items and unions', () => {
    expect(secretPaths(Answer)).toEqual([['token'], ['keys', '*', 'value'], ['nested', 'a/b']]);
    expect(secretPaths(Type.Object({ id: Type.String() }))).toEqual([]);
    expect(JSON.parse(JSON.stringify(Secret(Type.String())))).toEqual({ type: 'string', 'x-secret': true });
  });

  it('sets each one the answer carries to null and names it by JSON pointer; the rest is kept', () => {
    const answer = {
      id: 'x',
      token: 'raw-token',
      keys: [
        { name: 'one', value: 's1' },
        { name: 'two', value: 's2' },
      ],
      nested: { 'a/b': 's3' },
    };
    expect(withholdSecrets(answer, secretPaths(Answer))).toEqual([
      '/token',
      '/keys/0/value',
      '/keys/1/value',
      '/nested/a~1b',
    ]);
    expect(answer).toEqual({
      id: 'x',
      token: null,
      keys: [
        { name: 'one', value: null },
        { name: 'two', value: null },
      ],
      nested: { 'a/b': null },
    });
    // A field the answer does not carry is not added.
    const partial = { id: 'y', keys: [], nested: null };
    expect(withholdSecrets(partial, secretPaths(Answer))).toEqual([]);
    expect(partial).toEqual({ id: 'y', keys: [], nested: null });
  });
});
