import { createHash } from 'node:crypto';

/**
 * A digest of everything a schema holds, for caching what is compiled from it: every own property,
 * enumerable or not (TypeBox's `~kind` and `~optional` markers), symbol-keyed ones too (a refusal's
 * message, query/refusals.ts), in their order. Two schemas with the same key compile alike.
 * Undefined when the schema holds something the text cannot show the same way twice: a function
 * (a refinement, a codec), an object that is not plain (a date, a pattern), a cycle. Such a schema
 * is compiled each time.
 */
export function schemaKey(...parts: unknown[]): string | undefined {
  const hash = createHash('sha256');
  const onPath = new Set<object>();
  const write = (value: unknown): boolean => {
    if (value === null || typeof value === 'boolean' || typeof value === 'number' || typeof value === 'string') {
      hash.update(`${typeof value}:${JSON.stringify(value)};`);
      return true;
    }
    if (value === undefined) {
      hash.update('u;');
      return true;
    }
    if (typeof value !== 'object') return false;
    const proto = Object.getPrototypeOf(value);
    const isArray = Array.isArray(value);
    if (!isArray && proto !== Object.prototype && proto !== null) return false;
    if (onPath.has(value)) return false;
    onPath.add(value);
    hash.update(isArray ? '[' : '{');
    for (const key of Reflect.ownKeys(value)) {
      if (isArray && key === 'length') continue;
      const name = typeof key === 'symbol' ? `@${Symbol.keyFor(key) ?? key.description ?? ''}` : key;
      // A symbol not from the global registry could collide with another of the same description.
      if (typeof key === 'symbol' && Symbol.keyFor(key) === undefined) return false;
      const descriptor = Object.getOwnPropertyDescriptor(value, key)!;
      hash.update(`${JSON.stringify(name)}${descriptor.enumerable ? '=' : '~='}`);
      if (descriptor.get || descriptor.set) return false;
      if (!write(descriptor.value)) return false;
    }
    hash.update(isArray ? ']' : '}');
    onPath.delete(value);
    return true;
  };
  for (const part of parts) if (!write(part)) return undefined;
  return hash.digest('base64');
}
