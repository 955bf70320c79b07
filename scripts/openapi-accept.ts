/**
 * npm run openapi:accept -- [--config config.yaml]
 *
 * Accepts the served OpenAPI document as the published contract: writes openapi/snapshot.json
 * (what the compatibility gate, test/framework/openapi-compatibility-gate.test.ts, compares the
 * served document with) and prints what changed since the previous snapshot, breaking changes first.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { SNAPSHOT_FILE, compareDocuments, describeChanges } from './openapi/compatibility.ts';

const previous = existsSync(SNAPSHOT_FILE) ? JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8')) : undefined;
execFileSync(process.execPath, ['scripts/openapi-export.ts', '--out', SNAPSHOT_FILE, ...process.argv.slice(2)], { stdio: 'inherit' });
const changes = previous ? compareDocuments(previous, JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8'))) : [];
process.stdout.write(`${SNAPSHOT_FILE} written.${changes.length ? `\n${describeChanges(changes)}` : ''}\n`);
