/**
 * node scripts/run-together.ts <script> [<script> ...]
 *
 * Runs the named npm scripts at the same time and fails when any of them fails. `npm run check` runs
 * its parts this way: the type check, Biome, the dependency check and the API document's lint share
 * nothing, and each is mostly one thread of CPU (tsc) or waits, so on two cores they end together
 * sooner than one after another (docs/performance.md, "Run overheads"). Each part's output is
 * printed whole when it ends, under its name, never interleaved with another's; the exit status is
 * the first failure's, after every part has ended.
 */
import { spawn } from 'node:child_process';

const names = process.argv.slice(2);
if (names.length === 0) {
  process.stderr.write('usage: node scripts/run-together.ts <npm script> [<npm script> ...]\n');
  process.exit(2);
}

interface Outcome {
  readonly name: string;
  readonly code: number;
  readonly seconds: number;
}

function run(name: string): Promise<Outcome> {
  const started = performance.now();
  const child = spawn('npm', ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
  return new Promise((resolve) => {
    const finish = (code: number) => {
      const seconds = (performance.now() - started) / 1000;
      process.stdout.write(`> ${name} (${code === 0 ? 'passed' : `failed, exit ${code}`}, ${seconds.toFixed(1)} s)\n`);
      process.stdout.write(Buffer.concat(output));
      resolve({ name, code, seconds });
    };
    child.on('error', (err) => {
      output.push(Buffer.from(`${err.message}\n`));
      finish(127);
    });
    child.on('close', (code, signal) => finish(code ?? (signal ? 128 : 1)));
  });
}

const outcomes = await Promise.all(names.map(run));
const failed = outcomes.filter((outcome) => outcome.code !== 0);
if (failed.length > 0) {
  process.stderr.write(`failed: ${failed.map((outcome) => outcome.name).join(', ')}\n`);
  process.exitCode = failed[0]!.code;
}
