/**
 * npm run client -- [--check] [--config config.yaml] [--document openapi.json]
 *
 * Writes client/schema.d.ts, the types openapi-fetch needs, from the OpenAPI document the service
 * serves (exported the way `npm run openapi:export` does). With --check it writes nothing and
 * fails when the committed file differs from a fresh one: `npm run check` runs it, so a change to
 * the API that nobody regenerated the client for fails CI. With --document it reads a document
 * already exported (`npm run check:api` exports once for the lint and this check) instead.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { CLIENT_SCHEMA_FILE, clientSchemaSource } from '../tools/client-gen/generate.ts';

const { values } = parseArgs({
  options: {
    check: { type: 'boolean', default: false },
    config: { type: 'string', default: 'config.yaml' },
    document: { type: 'string' },
  },
});
const scratch = mkdtempSync(join(tmpdir(), 'tenantry-client-'));
try {
  const documentFile = values.document ?? join(scratch, 'openapi.json');
  if (!values.document)
    execFileSync(process.execPath, ['scripts/openapi-export.ts', '--out', documentFile, '--config', values.config], {
      stdio: 'inherit',
    });
  const fresh = await clientSchemaSource(JSON.parse(readFileSync(documentFile, 'utf8')));
  if (values.check) {
    let committed = '';
    try {
      committed = readFileSync(CLIENT_SCHEMA_FILE, 'utf8');
    } catch {
      // A missing file is a difference like any other.
    }
    if (committed !== fresh) {
      process.stderr.write(
        `${CLIENT_SCHEMA_FILE} is not the client of the served OpenAPI document: run \`npm run client\` and commit it.\n`,
      );
      process.exitCode = 1;
    } else process.stdout.write(`${CLIENT_SCHEMA_FILE} is current.\n`);
  } else {
    writeFileSync(CLIENT_SCHEMA_FILE, fresh);
    process.stdout.write(`${CLIENT_SCHEMA_FILE} written.\n`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
