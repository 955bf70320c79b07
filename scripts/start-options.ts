import { readFileSync } from 'node:fs';

/** The npm scripts that start the service, one per role (package.json). */
export type StartScript = 'start' | 'start:web' | 'start:worker';

/**
 * The Node options an operator's `npm run <script>` starts the service with, read from that script
 * in package.json: the one place they are written (docs/operations.md, "Process roles"). The bench
 * and the memory test start their processes with these, so what they measure is what runs.
 */
export function startNodeOptions(script: StartScript): string[] {
  const scripts = (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      scripts: Record<string, string>;
    }
  ).scripts;
  const command = scripts[script];
  const match = command?.match(/\bnode((?:\s+--\S+)*)\s+main\.ts\b/);
  if (!match)
    throw new Error(`package.json's "${script}" script is not \`node [--option ...] main.ts ...\`: ${command}`);
  return match[1]!.trim().split(/\s+/).filter(Boolean);
}
