import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { exportOpenApiDocument } from '../../framework/app.ts';
import { schemaKey } from '../../framework/http/schema-key.ts';
import { serializerCompilations } from '../../framework/http/serializer-cache.ts';
import { typeboxValidatorCompiler, validatorCompilationCount } from '../../framework/http/validation.ts';
import { withRefusal } from '../../framework/query/refusals.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { testConfig } from '../helpers/config.ts';

type Validate = (value: unknown) => { value?: unknown; error?: unknown };
const validatorFor = (schema: Parameters<typeof typeboxValidatorCompiler>[0]['schema'], httpPart = 'querystring') =>
  typeboxValidatorCompiler({ schema, httpPart, method: 'GET', url: '/x' }) as Validate;

describe('the web layer compiles each schema once per process', () => {
  it('a second app built in the same process compiles no serializer and no validator', async () => {
    const options = { config: testConfig(), modules: [...allModules, testkitModule] };
    const first = await exportOpenApiDocument(options);
    const serializers = serializerCompilations();
    const validators = validatorCompilationCount();
    // What was compiled for the first app (in this file, or in an earlier one of the worker).
    expect(serializers).toBeGreaterThan(0);
    expect(validators).toBeGreaterThan(0);
    const second = await exportOpenApiDocument(options);
    expect(serializerCompilations()).toBe(serializers);
    expect(validatorCompilationCount()).toBe(validators);
    // The same routes and schemas both times.
    expect(second).toEqual(first);
  });

  it('equal schemas built as different objects share one validator', () => {
    const make = () => Type.Object({ limit: Type.Integer({ minimum: 1, maximum: 100, default: 20 }) });
    expect(validatorFor(make())).toBe(validatorFor(make()));
  });

  it('a schema differing only in what JSON leaves out gets a validator of its own, which answers as its schema says', () => {
    const plain = Type.Object({ sort: Type.String({ pattern: '^[a-z]+$' }) });
    const refused = Type.Object({
      sort: withRefusal(Type.String({ pattern: '^[a-z]+$' }), 'sort takes field names, e.g. sort=title'),
    });
    expect(JSON.stringify(refused)).toBe(JSON.stringify(plain));
    const validatePlain = validatorFor(plain);
    const validateRefused = validatorFor(refused);
    expect(validateRefused).not.toBe(validatePlain);
    const messages = (result: { error?: unknown }) =>
      (result.error as { message: string }[]).map((issue) => issue.message).join(' | ');
    expect(messages(validateRefused({ sort: '1' }))).toContain('sort takes field names, e.g. sort=title');
    expect(messages(validatePlain({ sort: '1' }))).not.toContain('sort takes field names');
  });

  it('a body and a query string of the same schema get validators of their own (text is converted only in the query)', () => {
    const schema = Type.Object({ n: Type.Integer() });
    const body = validatorFor(schema, 'body');
    const query = validatorFor(schema, 'querystring');
    expect(body).not.toBe(query);
    expect(query({ n: '7' })).toEqual({ value: { n: 7 } });
    expect(body({ n: '7' }).error).toBeDefined();
  });
});

describe('schemaKey', () => {
  it('is the same for equal content and differs on any own property, enumerable or not, symbols included', () => {
    const a = { type: 'string' };
    const b = { type: 'string' };
    expect(schemaKey(a)).toBe(schemaKey(b));
    const hidden = Object.defineProperty({ type: 'string' }, '~kind', { value: 'String', enumerable: false });
    const shown = { type: 'string', '~kind': 'String' };
    expect(schemaKey(hidden)).not.toBe(schemaKey(a));
    expect(schemaKey(hidden)).not.toBe(schemaKey(shown));
    expect(schemaKey(withRefusal(Type.String(), 'one'))).not.toBe(schemaKey(withRefusal(Type.String(), 'two')));
    expect(schemaKey(Type.Optional(Type.String()))).not.toBe(schemaKey(Type.String()));
    expect(schemaKey(1, 'x')).not.toBe(schemaKey('1', 'x'));
    expect(schemaKey([1, 2])).not.toBe(schemaKey({ 0: 1, 1: 2 }));
  });

  it('is undefined, so nothing is cached, for what the key cannot show: a function, an object that is not plain, a local symbol', () => {
    expect(schemaKey({ type: 'string', check: () => true })).toBeUndefined();
    expect(schemaKey(Type.Refine(Type.String(), (value) => value.length > 2))).toBeUndefined();
    expect(schemaKey({ type: 'string', default: new Date(0) })).toBeUndefined();
    expect(schemaKey({ type: 'string', [Symbol('local')]: 'x' })).toBeUndefined();
    const cycle: Record<string, unknown> = { type: 'object' };
    cycle.self = cycle;
    expect(schemaKey(cycle)).toBeUndefined();
  });
});
