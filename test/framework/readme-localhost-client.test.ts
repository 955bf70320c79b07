import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import { addUser } from '../modules/auth/fixtures.ts';

const run = promisify(execFile);
const MARKER = '<!-- test/framework/readme-localhost-client.test.ts runs the two blocks below -->';

/** The README's code blocks after the marker, as written there. */
function readmeBlocks(): { sh: string; js: string } {
  const readme = readFileSync('README.md', 'utf8');
  const after = readme.slice(readme.indexOf(MARKER));
  const block = (lang: string) =>
    /```(\w+)\n([\s\S]*?)```/g.exec(after.slice(after.indexOf(`\`\`\`${lang}\n`)))?.[2] ?? '';
  return { sh: block('sh'), js: block('js') };
}

let app: TestApp;
let dir: string;
let user: { email: string; password: string };
/** The README's text, with the port this test listens on and a user of this test's acme tenant. */
let adapt: (text: string) => string;

beforeAll(async () => {
  app = await startTestApp();
  await app.web!.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.web!.server.address() as AddressInfo).port;
  const acme = await createCustomer(app, 'acme');
  user = await addUser(app, acme, {});
  dir = mkdtempSync(join(tmpdir(), 'readme-client-'));
  adapt = (text) =>
    text
      .replaceAll('acme.localhost:3000', `acme.localhost:${port}`)
      .replaceAll('boss@acme.example', user.email)
      .replaceAll('a long password', user.password);
});
afterAll(async () => {
  await app?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the README shows how a program reaches a tenant on *.localhost', () => {
  it('has both blocks after its marker', () => {
    const { sh, js } = readmeBlocks();
    expect(sh).toMatch(/curl --resolve acme\.localhost:3000:127\.0\.0\.1/);
    expect(js).toMatch(/lookup/);
  });

  it('curl --resolve: signs in on the tenant and reads the identity', async () => {
    const { stdout } = await run('sh', ['-e', '-c', adapt(readmeBlocks().sh)], { cwd: dir });
    // The first curl prints the login's Identity, the second /me's: both this tenant's user.
    const answers = stdout.split(/(?<=\})(?=\{)/).map((text) => JSON.parse(text) as { email: string });
    expect(answers.map((a) => a.email)).toEqual([user.email, user.email]);
  });

  it('node:http with its own lookup: signs in on the tenant and reads the identity', async () => {
    const file = join(dir, 'client.mjs');
    writeFileSync(file, adapt(readmeBlocks().js));
    const { stdout } = await run(process.execPath, [file]);
    expect(stdout.trim()).toBe(`200 ${user.email}`);
  });

  it("needs that lookup: without it, Node's resolver does not know acme.localhost", async () => {
    const file = join(dir, 'no-lookup.mjs');
    const withoutLookup = adapt(readmeBlocks().js).replace('{ method, headers, lookup }', '{ method, headers }');
    expect(withoutLookup).not.toMatch(/\{ method, headers, lookup \}/);
    writeFileSync(file, withoutLookup);
    await expect(run(process.execPath, [file])).rejects.toMatchObject({
      stderr: expect.stringMatching(/ENOTFOUND|EAI_AGAIN/),
    });
  });
});
