import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../framework/db/embedded.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string;
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * One PostgreSQL for the whole run: TEST_DATABASE_URL (a server where we may create databases),
 * or an embedded server in a temporary directory. Each test file creates its own database on it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const external = process.env.TEST_DATABASE_URL;
  if (external) {
    project.provide('pgAdminUrl', external);
    return async () => {};
  }
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-test-pg-'));
  // The server runs as the postgres OS user when we are root: it must reach its data directory.
  chmodSync(dir, 0o755);
  let server: EmbeddedServer | undefined;
  server = await startEmbeddedPostgres({ dir: join(dir, 'data'), port: await freePort() });
  project.provide('pgAdminUrl', server.adminUrl);
  return async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
