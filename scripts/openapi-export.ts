/**
 * npm run openapi:export -- [--out openapi.json] [--config config.yaml]
 *
 * Writes the OpenAPI document the service serves at /api/v1/openapi.json (the installation's
 * modules, as configured), to --out or to stdout. The document is derived from the declarations
 * alone (exportOpenApiDocument in framework/app.ts): no database is opened, so this (and `npm run
 * check`, which lints the document and checks the typed client through it) needs no PostgreSQL and
 * works beside a running service.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadConfig } from '../framework/config/load.ts';

const { values } = parseArgs({
  options: { out: { type: 'string' }, config: { type: 'string', default: 'config.yaml' } },
});
const config = loadConfig(values.config);
const [{ exportOpenApiDocument }, { allModules }] = await Promise.all([
  import('../framework/app.ts'),
  import('../modules/index.ts'),
]);
const text = `${JSON.stringify(await exportOpenApiDocument({ config, modules: allModules }), null, 2)}\n`;
if (values.out) writeFileSync(values.out, text);
else process.stdout.write(text);
