import { SETTINGS_ENV } from './protocol.ts';
import { serveScenario } from './scenario-service.ts';
import { FLOOD_ENDPOINTS, type WebhookBenchSettings } from './webhooks.ts';

/**
 * The service under the webhooks scenario, in its own process: role all (web and worker) with
 * webhooks.allow_private_networks and allow_http on, so its deliveries may reach the run's
 * loopback receiver; one tenant and a signed-in user who manages webhooks and creates tasks, and
 * two more for the fairness phase (flood: FLOOD_ENDPOINTS endpoints, past the default limit of
 * webhooks.max_endpoints_per_tenant; calm: one). Answers the run over IPC like service.ts.
 */
const settings = JSON.parse(process.env[SETTINGS_ENV] ?? '{}') as WebhookBenchSettings;

void serveScenario({
  name: `webhook-bench-${settings.runId}`,
  role: 'all',
  permissions: ['webhook:manage', 'task:read', 'task:update'],
  tenants: ['flood', 'calm'],
  settings: {
    server: { host: '127.0.0.1', port: 0, public_host: 'localhost', log_level: 'warn' },
    database: { url: settings.databaseUrl, pool_size: settings.poolSize },
    webhooks: { allow_private_networks: true, allow_http: true, max_endpoints_per_tenant: FLOOD_ENDPOINTS },
  },
});
