import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { validateConfig } from '../../framework/config/load.ts';
import { buildApp, type Role } from '../../framework/app.ts';
import { allModules } from '../../modules/index.ts';
import { createCustomer, signInAs, type TestApp } from '../../test/helpers/app.ts';
import type { ChildMessage, ChildRequest } from './protocol.ts';

/** A tenant of the scenario: its host and a signed-in user's cookie. */
export type ScenarioTenant = { host: string; cookie: string };

/**
 * What a scenario's service process answers once it listens: its port, its tenant's host and a
 * signed-in cookie, and the same for each further tenant it was asked for, by name.
 */
export type ScenarioReady = {
  type: 'ready';
  port: number;
  host: string;
  cookie: string;
  tenants: Record<string, ScenarioTenant>;
};

/**
 * The body of a scenario's service process (s3-service.ts, webhook-service.ts): builds the app
 * from the scenario's settings with the installation's modules, creates one tenant
 * (`<name>.localhost`) and a user signed in with the given permissions (and so for each of
 * `tenants`, `<name>-<tenant>.localhost`), listens on a free port, answers `ready` over IPC like
 * service.ts, and closes on `stop`.
 */
export async function serveScenario(options: {
  name: string;
  role: Role;
  settings: Record<string, unknown>;
  permissions: string[];
  tenants?: readonly string[];
}): Promise<void> {
  const send = (message: ChildMessage | ScenarioReady) => process.send?.(message);
  try {
    const config = validateConfig(options.settings, 'benchmark settings');
    const logger = pino({ level: config.server.log_level }) as FastifyBaseLogger;
    const built = await buildApp({
      config,
      modules: allModules,
      databaseUrl: config.database.url,
      role: options.role,
      logger,
    });
    const { rows } = await built.services.db.pool.query<{ id: string; slug: string }>(
      'select id, slug from tenants where is_operator',
    );
    // The test helpers' tenant and sign-in: they need the app's services, config and operator tenant only.
    const app = {
      ...built,
      config,
      operator: { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true },
    } as unknown as TestApp;
    const host = `${options.name}.localhost`;
    const tenant = await createCustomer(app, options.name, host);
    const { cookie } = await signInAs(app, tenant, options.permissions);
    const tenants: Record<string, ScenarioTenant> = {};
    for (const name of options.tenants ?? []) {
      const slug = `${options.name}-${name}`;
      const other = await createCustomer(app, slug, `${slug}.localhost`);
      tenants[name] = { host: `${slug}.localhost`, cookie: (await signInAs(app, other, options.permissions)).cookie };
    }
    await built.web!.listen({ host: '127.0.0.1', port: 0 });
    const address = built.web!.server.address();
    if (typeof address !== 'object' || !address) throw new Error('the service has no address');
    process.on('message', (message: ChildRequest) => {
      if (message.type === 'stop') void built.close().finally(() => process.exit(0));
    });
    send({ type: 'ready', port: address.port, host, cookie, tenants });
  } catch (err) {
    send({ type: 'failed', error: (err as Error).stack ?? (err as Error).message });
    process.exit(1);
  }
}
