import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { SNAPSHOT_FILE } from '../../scripts/openapi/compatibility.ts';
import { CLIENT_SCHEMA_FILE, clientSchemaSource } from '../../tools/client-gen/generate.ts';

/**
 * The committed typed client is the client of the accepted document. The compatibility gate keeps
 * the accepted document equal to the served one, so together they keep the client true; `npm run
 * check` also regenerates it from the served document (`npm run client:check`).
 */
it('client/schema.d.ts is what openapi-typescript makes of openapi/snapshot.json', async () => {
  const fresh = await clientSchemaSource(JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8')));
  expect(
    readFileSync(CLIENT_SCHEMA_FILE, 'utf8') === fresh,
    'run `npm run client` (or `npm run openapi:accept`) and commit client/schema.d.ts',
  ).toBe(true);
});
