import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** The environment of a child process: ours without any TENANTRY_* setting, plus the given ones. */
export function childEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('TENANTRY_')) env[key] = value;
  return { ...env, ...settings };
}

export interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `npm run <script> -- <args>` from the repository root, with the given settings, to its end. */
export function npmRun(
  script: string,
  args: string[],
  settings: Record<string, string>,
  timeoutMs = 60_000,
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', script, '--', ...args], {
      cwd: REPO,
      env: childEnv(settings),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`npm run ${script} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs the documented command `npm run admin:invite -- <args>` from the repository root. */
export const adminInvite = (args: string[], settings: Record<string, string>, timeoutMs = 60_000): Promise<Finished> =>
  npmRun('admin:invite', args, settings, timeoutMs);

/** The set-password link the command printed. */
export function printedLink(output: string): URL {
  const found = output.match(/https?:\/\/\S+\/auth\/reset\?token=\S+/);
  if (!found) throw new Error(`no link in output:\n${output}`);
  return new URL(found[0]);
}

/**
 * Starts `node main.ts` (what npm start runs, or start:web and start:worker with `role`) and
 * resolves once it logged its start; `url` is where a web role listens ('' for a worker).
 */
export function startService(
  settings: Record<string, string>,
  timeoutMs = 60_000,
  role: 'all' | 'web' | 'worker' = 'all',
): Promise<{ child: ChildProcess; url: string; log: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['main.ts', '--role', role], {
      cwd: REPO,
      env: childEnv(settings),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const log = () => output;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the service did not start in ${timeoutMs} ms\n${output}`));
    }, timeoutMs);
    const onData = (c: Buffer) => {
      output += c.toString();
      for (const line of output.split('\n')) {
        if (!line.includes('tenantry started')) continue;
        try {
          // listening: the bound address to connect to (url is the operator's host, for people).
          const entry = JSON.parse(line) as { listening?: string };
          clearTimeout(timer);
          resolve({ child, url: entry.listening ?? '', log });
          return;
        } catch {
          // a partial line: wait for the rest
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the service exited with ${code}\n${output}`));
    });
  });
}

/** Stops a started service with SIGTERM and waits for it to exit. */
export async function stopService(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
