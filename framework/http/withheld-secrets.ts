import type { FastifyRequest } from 'fastify';
import { SECRET } from '../entity/secret-field.ts';

/** Where a secret sits in an answer: property names, '*' for every item of an array, or one item's index. */
export type SecretPath = readonly string[];

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The paths of the fields a response schema marks as secrets (Secret(), `x-secret: true`):
 * through properties, array items and the members of anyOf, oneOf and allOf.
 */
export function secretPaths(schema: unknown): SecretPath[] {
  const found = new Map<string, SecretPath>();
  const walk = (node: unknown, at: SecretPath, seen: Set<unknown>): void => {
    if (!isObject(node) || seen.has(node)) return;
    if (node[SECRET] === true) {
      found.set(JSON.stringify(at), at);
      return;
    }
    const inside = new Set(seen).add(node);
    if (isObject(node.properties))
      for (const [name, child] of Object.entries(node.properties)) walk(child, [...at, name], inside);
    if (node.items !== undefined) walk(node.items, [...at, '*'], inside);
    for (const key of ['anyOf', 'oneOf', 'allOf'])
      if (Array.isArray(node[key])) for (const member of node[key] as unknown[]) walk(member, at, inside);
  };
  walk(schema, [], new Set());
  return [...found.values()];
}

const pointerSegment = (key: string) => key.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * Sets every secret the body carries at these paths to null, in place, and answers the JSON
 * pointers of the fields it found (null already or not): the answer's secret fields.
 */
export function withholdSecrets(body: unknown, paths: readonly SecretPath[]): string[] {
  const pointers: string[] = [];
  const visit = (node: unknown, path: SecretPath, i: number, pointer: string): void => {
    const key = path[i]!;
    if (key === '*') {
      if (Array.isArray(node)) for (const [n, item] of node.entries()) visit(item, path, i + 1, `${pointer}/${n}`);
      return;
    }
    if (Array.isArray(node)) {
      const n = Number(key);
      if (Number.isInteger(n) && n >= 0 && n < node.length) visit(node[n], path, i + 1, `${pointer}/${n}`);
      return;
    }
    if (!isObject(node) || !Object.hasOwn(node, key)) return;
    const at = `${pointer}/${pointerSegment(key)}`;
    if (i === path.length - 1) {
      node[key] = null;
      pointers.push(at);
    } else visit(node[key], path, i + 1, at);
  };
  for (const path of paths) if (path.length > 0) visit(body, path, 0, '');
  return pointers;
}

/** Each route's secret paths by status, worked out once from its response schemas. */
const byRoute = new WeakMap<object, Map<number, SecretPath[]>>();

/**
 * The secret paths of the answer a route gives with this status, read from the route's declared
 * response schema (the same object fastify serialises with), once per route and status.
 */
export function routeSecrets(request: FastifyRequest, status: number): SecretPath[] {
  const responses = request.routeOptions.schema?.response as Record<string, unknown> | undefined;
  if (!responses) return [];
  let known = byRoute.get(responses);
  if (!known) {
    known = new Map();
    byRoute.set(responses, known);
  }
  let paths = known.get(status);
  if (!paths) {
    paths = secretPaths(responses[String(status)]);
    known.set(status, paths);
  }
  return paths;
}
