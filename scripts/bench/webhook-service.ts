import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { validateConfig } from '../../framework/config/load.ts';
import { buildApp } from '../../framework/app.ts';
import { allModules } from '../../modules/index.ts';
import { createCustomer, signInAs, type TestApp } from '../../test/helpers/app.ts';
import { SETTINGS_ENV, type ChildMessage, type ChildRequest } from './protocol.ts';
import type { WebhookBenchSettings } from './webhooks.ts';

/**
 * The service under the webhooks scenario, in its own process: role all (web and worker) with
 * webhooks.allow_private_networks and allow_http on, so its deliveries may reach the run's
 * loopback receiver; one tenant and a signed-in user who manages webhooks and creates tasks.
 * Answers the run over IPC like service.ts.
 */
const settings = JSON.parse(process.env[SETTINGS_ENV] ?? '{}') as WebhookBenchSettings;
const send = (message: ChildMessage | { type: 'ready'; port: number; host: string; cookie: string }) => process.send?.(message);

async function main(): Promise<void> {
  const config = validateConfig(
    {
      server: { host: '127.0.0.1', port: 0, public_host: 'localhost', log_level: 'warn' },
      database: { url: settings.databaseUrl, pool_size: settings.poolSize },
      webhooks: { allow_private_networks: true, allow_http: true },
    },
    'benchmark settings',
  );
  const logger = pino({ level: config.server.log_level }) as FastifyBaseLogger;
  const built = await buildApp({ config, modules: allModules, databaseUrl: settings.databaseUrl, role: 'all', logger });
  const { rows } = await built.services.db.pool.query<{ id: string; slug: string }>('select id, slug from tenants where is_operator');
  // The test helpers' tenant and sign-in: they need the app's services, config and operator tenant only.
  const app = { ...built, config, operator: { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true } } as unknown as TestApp;
  const host = `webhook-bench-${settings.runId}.localhost`;
  const tenant = await createCustomer(app, `webhook-bench-${settings.runId}`, host);
  const { cookie } = await signInAs(app, tenant, ['webhook:manage', 'task:read', 'task:update']);
  await built.web!.listen({ host: '127.0.0.1', port: 0 });
  const address = built.web!.server.address();
  if (typeof address !== 'object' || !address) throw new Error('the service has no address');
  process.on('message', (message: ChildRequest) => {
    if (message.type === 'stop') void built.close().finally(() => process.exit(0));
  });
  send({ type: 'ready', port: address.port, host, cookie });
}

main().catch((err: Error) => {
  send({ type: 'failed', error: err.stack ?? err.message });
  process.exit(1);
});
