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
    throw new ConfigError(`${file}: not valid YAML (${(err as Error).message.split('\n')[0]})`);
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
  const firstError = [...compiled.Errors(withDefaults)][0];
  if (firstError) {
    throw new ConfigError(`${file}: ${describeError(firstError)}`);
  }
  const config = withDefaults as Config;
  const broken = checkConfigRules(config);
  if (broken) throw new ConfigError(`${file}: ${broken}`);
  return config;
}

function describeError(error: { instancePath: string; message: string; keyword: string; params: unknown }): string {
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperties?: string[] }).additionalProperties ?? [];
    const where = keyOf(error.instancePath);
    return `${extra.map((k) => (where ? `${where}.${k}` : k)).join(', ')} is not a known key`;
  }
  return `${keyOf(error.instancePath) || '(top level)'} ${error.message}`;
}

function keyOf(instancePath: string): string {
  return instancePath.replace(/^\//, '').replaceAll('/', '.');
}
