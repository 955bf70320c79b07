import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import { schemaKey } from './schema-key.ts';

/** fastify's own serializer factory (fast-json-stringify), which the cache below compiles with. */
const compileWith = SerializerSelector();

/**
 * Response serializers compiled once per process for each distinct schema (fastify's documented
 * `schemaController.compilersFactory.buildSerializer`, around fastify's own fast-json-stringify
 * compiler). Compiling them was the larger part of building the web layer (docs/performance.md,
 * "Run overheads"), and most routes share answers: the problem answers of every route, an
 * entity's read schema on its read, create and update. A second app built in the same process
 * (the test files sharing a worker) compiles nothing that an app before it compiled.
 *
 * A serializer depends only on its schema, the shared schemas its `$ref`s can reach and the
 * serializer options: the key is a digest of the three (schema-key.ts), so equal schemas built as
 * different objects share one serializer, and a changed schema gets a new one. What is cached holds
 * no state: a compiled serializer turns a value into text and remembers nothing.
 */
const compiled = new Map<string, SerializerSelector.Serializer>();
let compilations = 0;

export const cachedSerializerFactory: SerializerSelector.SerializerFactory = (externalSchemas, serializerOpts) => {
  const compileOnce = compileWith(externalSchemas, serializerOpts);
  const compile: SerializerSelector.SerializerCompiler = (route) => {
    compilations += 1;
    return compileOnce(route);
  };
  return (route) => {
    const key = schemaKey(externalSchemas, serializerOpts, route.schema);
    if (key === undefined) return compile(route);
    let serializer = compiled.get(key);
    if (!serializer) {
      serializer = compile(route);
      compiled.set(key, serializer);
    }
    return serializer;
  };
};

/** How many serializers this process has compiled so far (a test reads it to see reuse). */
export function serializerCompilations(): number {
  return compilations;
}
