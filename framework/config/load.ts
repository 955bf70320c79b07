import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { Compile } from 'typebox/compile';
import Value from 'typebox/value';
import { ConfigSchema, type Config } from './schema.ts';
import { applyEnvOverrides } from './env.ts';
import { checkConfigRules } from './rules.ts';
import { ConfigError } from './config-error.ts';

export { ConfigError };

const compiled = Compile(ConfigSchema);

/** Loads a config file, applies TENANTRY_<SECTION>_<KEY> overrides, fills defaults and validates. */
export function loadConfig(file = 'config.yaml', env: NodeJS.ProcessEnv = process.env): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new ConfigError(`${file}: the configuration file is missing or unreadable`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    const at = (err as { linePos?: { line: number; col: number }[] }).linePos?.[0];
    const where = at ? ` at line ${at.line}, column ${at.col}` : '';
    const reason = (err as Error).message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    throw new ConfigError(`${file}: not valid YAML${where} (${reason})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${file}: the top level must be a mapping of sections`);
  }
  return validateConfig(raw as Record<string, unknown>, file, env);
}

/** Validates an already parsed document; used by loadConfig and by tests building configs in memory. */
export function validateConfig(raw: Record<string, unknown>, file: string, env: NodeJS.ProcessEnv = {}): Config {
  const fileSecret = (raw as { auth?: { oidc?: { client_secret?: unknown } } }).auth?.oidc?.client_secret;
  if (typeof fileSecret === 'string' && fileSecret !== '') {
    throw new ConfigError(
      `${file}: auth.oidc.client_secret must not be written in the file; supply it through TENANTRY_AUTH_OIDC_CLIENT_SECRET`,
    );
  }
  const merged = applyEnvOverrides(structuredClone(raw), env, file);
  const withDefaults = Value.Default(ConfigSchema, merged);
  const errors = [...compiled.Errors(withDefaults)] as SchemaIssue[];
  if (errors.length > 0) {
    throw new ConfigError(`${file}: ${describeError(errors)}`);
  }
  const config = withDefaults as Config;
  const broken = checkConfigRules(config);
  if (broken) throw new ConfigError(`${file}: ${broken}`);
  return config;
}

interface SchemaIssue {
  instancePath: string;
  schemaPath: string;
  message: string;
  keyword: string;
  params: Record<string, unknown>;
}

const ARTICLE: Record<string, string> = {
  integer: 'an integer',
  string: 'a string',
  boolean: 'true or false',
  object: 'a mapping',
  number: 'a number',
};

/** One sentence naming the key and the rule it breaks; values are never echoed, since some are secrets. */
function describeError(errors: SchemaIssue[]): string {
  const first = errors[0]!;
  const key = keyOf(first.instancePath) || '(top level)';
  const unknownKey = first.keyword === 'boolean' && first.schemaPath.endsWith('/additionalProperties');
  if (unknownKey) return `${key} is not a known key`;
  switch (first.keyword) {
    case 'additionalProperties': {
      const extra = (first.params.additionalProperties as string[] | undefined) ?? [];
      const where = keyOf(first.instancePath);
      return `${extra.map((k) => (where ? `${where}.${k}` : k)).join(', ')} is not a known key`;
    }
    case 'const': {
      // A union of literals reports one issue per allowed value.
      const allowed = errors
        .filter((e) => e.instancePath === first.instancePath && e.keyword === 'const')
        .map((e) => String(e.params.allowedValue));
      return `${key} must be one of ${allowed.join(', ')}`;
    }
    case 'type':
      return `${key} must be ${ARTICLE[String(first.params.type)] ?? String(first.params.type)}`;
    case 'minimum':
      return `${key} must be at least ${String(first.params.limit)}`;
    case 'maximum':
      return `${key} must be at most ${String(first.params.limit)}`;
    case 'minLength':
      return first.params.limit === 1
        ? `${key} must not be empty`
        : `${key} must be at least ${String(first.params.limit)} characters`;
    default:
      return `${key} ${first.message}`;
  }
}

function keyOf(instancePath: string): string {
  return instancePath.replace(/^\//, '').replaceAll('/', '.');
}
