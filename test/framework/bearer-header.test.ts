import { describe, expect, it } from 'vitest';
import { bearerTokenOf } from '../../framework/access/bearer.ts';

const of = (authorization: string | undefined) =>
  bearerTokenOf({ headers: authorization === undefined ? {} : { authorization } });

describe('the bearer token a request carries (Authorization: Bearer)', () => {
  it('reads one token after the scheme, whatever its case and the spaces around it', () => {
    expect(of('Bearer tnt_pat_abc')).toBe('tnt_pat_abc');
    expect(of('bearer   tnt_pat_abc  ')).toBe('tnt_pat_abc');
    expect(of('BEARER x')).toBe('x');
  });

  it('is none without the header or with another scheme, so the cookie decides', () => {
    expect(of(undefined)).toBeUndefined();
    expect(of('Basic dXNlcjpwYXNz')).toBeUndefined();
    expect(of('Bearerabc')).toBeUndefined();
  });

  it('is a credential that fails (the empty string), never none, when the scheme is there without one usable token', () => {
    expect(of('Bearer')).toBe('');
    expect(of('Bearer ')).toBe('');
    expect(of('Bearer two tokens')).toBe('');
    expect(of(`Bearer ${'x'.repeat(201)}`)).toBe('');
  });
});
