import type { TSchema } from 'typebox';
import { ConfigSchema } from './schema.ts';
import { ConfigError } from './config-error.ts';

export const ENV_PREFIX = 'TENANTRY';

interface LeafKey {
  path: string[];
  kind: 'string' | 'integer' | 'boolean';
  /** An integer key that may also be left empty (metrics.port): an empty variable sets it empty. */
  emptyAllowed?: boolean;
}

/** Every leaf key of the schema, so env names derive from known paths (keys themselves contain '_'). */
function leafKeys(schema: TSchema, prefix: string[] = []): LeafKey[] {
  const node = schema as { type?: string; properties?: Record<string, TSchema>; anyOf?: TSchema[] };
  if (node.type === 'object' && node.properties) {
    return Object.entries(node.properties).flatMap(([key, child]) => leafKeys(child, [...prefix, key]));
  }
  const members = node.anyOf as { type?: string; const?: unknown }[] | undefined;
  if (members?.some((m) => m.type === 'integer'))
    return [{ path: prefix, kind: 'integer', emptyAllowed: members.some((m) => m.const === '') }];
  const kind = node.type === 'integer' ? 'integer' : node.type === 'boolean' ? 'boolean' : 'string';
  return [{ path: prefix, kind }];
}

const LEAVES = leafKeys(ConfigSchema);

export function envName(path: string[]): string {
  return [ENV_PREFIX, ...path].join('_').toUpperCase();
}

/** Overrides file values with TENANTRY_<SECTION>_<KEY> variables, converting to the schema's type. */
export function applyEnvOverrides(
  raw: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  file: string,
): Record<string, unknown> {
  for (const leaf of LEAVES) {
    const name = envName(leaf.path);
    const value = env[name];
    if (value === undefined) continue;
    setPath(raw, leaf.path, convert(value, leaf, name, file));
  }
  return raw;
}

function convert(value: string, leaf: LeafKey, name: string, file: string): unknown {
  if (leaf.kind === 'integer') {
    if (leaf.emptyAllowed && value.trim() === '') return '';
    if (!/^-?\d+$/.test(value.trim())) {
      throw new ConfigError(`${file}: ${leaf.path.join('.')} (from ${name}) must be an integer`);
    }
    return Number(value);
  }
  if (leaf.kind === 'boolean') {
    if (!['true', 'false', '1', '0'].includes(value)) {
      throw new ConfigError(`${file}: ${leaf.path.join('.')} (from ${name}) must be true or false`);
    }
    return value === 'true' || value === '1';
  }
  return value;
}

function setPath(target: Record<string, unknown>, path: string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (typeof next !== 'object' || next === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}
