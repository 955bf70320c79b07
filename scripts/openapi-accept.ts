/**
 * npm run openapi:accept -- [--config config.yaml]
 *
 * Accepts the served OpenAPI document as the published contract: writes openapi/snapshot.json
 * (what the compatibility gate, test/framework/openapi-compatibility-gate.test.ts, compares the
 * served document with) and prints what changed since the previous snapshot, breaking changes first.
 * It also regenerates the typed client, client/schema.d.ts, from the same document (`npm run client`),
 * so that the contract and the client change in one step.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { CLIENT_SCHEMA_FILE, clientSchemaSource } from '../tools/client-gen/generate.ts';
import { SNAPSHOT_FILE, compareDocuments, describeChanges } from './openapi/compatibility.ts';

const previous = existsSync(SNAPSHOT_FILE) ? JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8')) : undefined;
execFileSync(process.execPath, ['scripts/openapi-export.ts', '--out', SNAPSHOT_FILE, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
const accepted = JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8'));
writeFileSync(CLIENT_SCHEMA_FILE, await clientSchemaSource(accepted));
const changes = previous ? compareDocuments(previous, accepted) : [];
process.stdout.write(
  `${SNAPSHOT_FILE} and ${CLIENT_SCHEMA_FILE} written.${changes.length ? `\n${describeChanges(changes)}` : ''}\n`,
);
