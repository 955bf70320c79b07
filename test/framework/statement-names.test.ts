import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createCustomer, signInAs, startTestApp, type SignedIn, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { ROOT } from '../../framework/app.ts';
import { prepared, statementName, statementNameOf } from '../../framework/db/statements.ts';

/**
 * Prepared statements and poolers (issue 49, point 1). A statement's name comes from its text, so
 * two processes never give one name to different SQL (a pooler moving a client between server
 * connections would otherwise run another process's statement). And with
 * `database.prepared_statements: unnamed` (PgBouncer before 1.21) nothing is prepared at all.
 */

let named: TestApp;
let unnamed: TestApp;
let acme: TenantRef;
let writer: SignedIn;

beforeAll(async () => {
  // One connection each: what a request leaves prepared is on the session the next query uses.
  named = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
  unnamed = await startTestApp({
    databaseUrl: named.databaseUrl,
    config: testConfig({ database: { pool_size: 1, prepared_statements: 'unnamed' } }),
  });
  acme = await createCustomer(named, 'acme');
  writer = await signInAs(named, acme, ['widget:read', 'widget:write']);
});
afterAll(async () => {
  await unnamed?.close();
  await named?.close();
});

/** A create, a list, a read and a command-free update: the request path's statements, as a client sends them. */
async function requests(app: TestApp): Promise<void> {
  const http = app.http('acme.localhost');
  const created = await http
    .post('/api/v1/testkit/widgets')
    .set('Cookie', writer.cookie)
    .send({ name: `w-${Math.random()}`, size: 1, color: 'red' });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  expect((await http.get('/api/v1/testkit/widgets').set('Cookie', writer.cookie)).status).toBe(200);
  expect((await http.get(`/api/v1/testkit/widgets/${created.body.id}`).set('Cookie', writer.cookie)).status).toBe(200);
  const patched = await http
    .patch(`/api/v1/testkit/widgets/${created.body.id}`)
    .set('Cookie', writer.cookie)
    .send({ size: 2 });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
}

const preparedOn = async (app: TestApp) =>
  (
    await app.services.db.pool.query<{ name: string; statement: string }>(
      'select name, statement from pg_prepared_statements',
    )
  ).rows;

describe('named prepared statements', () => {
  it("are named by their text's hash: every one the request path left prepared", async () => {
    await requests(named);
    const statements = await preparedOn(named);
    expect(statements.length).toBeGreaterThan(3);
    for (const { name, statement } of statements) expect(name).toBe(statementNameOf(statement));
  });

  it('get the same name in another process that met them in another order', () => {
    const first = 'select 1 as first_of_two';
    const second = 'select 2 as second_of_two';
    prepared(first);
    prepared(second);
    const script = `
      import { prepared, statementName } from ${JSON.stringify(join(ROOT, 'framework/db/statements.ts'))};
      prepared(${JSON.stringify(second)});
      prepared(${JSON.stringify(first)});
      process.stdout.write(JSON.stringify([statementName(${JSON.stringify(first)}), statementName(${JSON.stringify(second)})]));
    `;
    const other = JSON.parse(
      execFileSync(join(ROOT, 'node_modules/.bin/node'), ['--input-type=module', '-e', script], {
        cwd: ROOT,
        encoding: 'utf8',
      }),
    ) as string[];
    expect(other).toEqual([statementName(first), statementName(second)]);
    expect(statementName(first)).not.toBe(statementName(second));
  });
});

describe('database.prepared_statements: unnamed', () => {
  it('leaves no statement prepared on the connection, whatever the request path sent', async () => {
    // The same requests, on a connection of its own.
    await unnamed.services.db.pool.query('deallocate all');
    await requests(unnamed);
    expect(await preparedOn(unnamed)).toEqual([]);
  });
});
