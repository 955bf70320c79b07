/**
 * npm run openapi:export -- [--out openapi.json] [--config config.yaml]
 *
 * Writes the OpenAPI document the service serves at /api/v1/openapi.json (the installation's
 * modules, as configured), to --out or to stdout. Like the other operator commands it uses
 * database.url, or the embedded PostgreSQL the running service holds, or starts it for its own
 * duration: the document is built by the same start-up as the service's.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../framework/config/load.ts';
import { commandDatabase } from './command-database.ts';
import type { App } from '../framework/app.ts';

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { out: { type: 'string' }, config: { type: 'string', default: 'config.yaml' } },
  });
  const config = loadConfig(values.config);
  const [{ buildApp }, { allModules }, { openApiDocument }] = await Promise.all([
    import('../framework/app.ts'),
    import('../modules/index.ts'),
    import('../framework/openapi/document.ts'),
  ]);
  const { databaseUrl, embedded } = await commandDatabase(config);
  let app: App | undefined;
  try {
    app = await buildApp({
      config,
      modules: allModules,
      databaseUrl,
      role: 'web',
      startWorker: false,
      scheduleJobs: false,
      logger: pino({ level: 'warn' }, pino.destination(2)) as FastifyBaseLogger,
    });
    await app.web!.ready();
    const text = `${JSON.stringify(openApiDocument(app.web!), null, 2)}\n`;
    if (values.out) writeFileSync(values.out, text);
    else process.stdout.write(text);
    return 0;
  } finally {
    await app?.close();
    await embedded?.stop();
  }
}

process.exitCode = await main();
