import { validateConfig } from '../../framework/config/load.ts';
import type { Config } from '../../framework/config/schema.ts';

type DeepPartial<T> = { [K in keyof T]?: T[K] extends object ? DeepPartial<T[K]> : T[K] };

/** A validated config for tests; the defaults plus whatever the test overrides. */
export function testConfig(overrides: DeepPartial<Config> = {}, env: NodeJS.ProcessEnv = {}): Config {
  const base: Record<string, unknown> = {
    server: { public_host: 'operator.localhost', log_level: 'silent', ...(overrides.server ?? {}) },
    database: { pool_size: 5, ...(overrides.database ?? {}) },
    auth: { oidc: { ...(overrides.auth?.oidc ?? {}) } },
    files: { ...(overrides.files ?? {}) },
    mail: { ...(overrides.mail ?? {}) },
    webhooks: { ...(overrides.webhooks ?? {}) },
    metrics: { ...(overrides.metrics ?? {}) },
    billing: { ...(overrides.billing ?? {}), sandbox: { ...(overrides.billing?.sandbox ?? {}) } },
    history: { ...(overrides.history ?? {}) },
  };
  return validateConfig(base, 'test-config', env);
}
