import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Prints where a V8 CPU profile (node --cpu-prof, or `npm run bench -- --cpu-prof DIR`) spent its
 * time: self time by function and by package, idle excluded.
 *   node scripts/bench/profile-summary.ts DIR|FILE [top]
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

function newest(path: string): string {
  if (!statSync(path).isDirectory()) return path;
  const files = readdirSync(path)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => join(path, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (!files[0]) throw new Error(`no .cpuprofile in ${path}`);
  return files[0];
}

function packageOf(url: string): string {
  if (!url) return '(native)';
  const at = url.lastIndexOf('node_modules/');
  if (at >= 0) {
    const rest = url.slice(at + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return 'node';
  return relative(process.cwd(), url.replace('file://', '')).split('/').slice(0, 2).join('/');
}

const file = newest(process.argv[2] ?? '.');
const top = Number(process.argv[3] ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
// Self time per node from the sample timeline (more exact than hitCount × interval).
const selfUs = new Map<number, number>();
const samples = profile.samples ?? [];
const deltas = profile.timeDeltas ?? [];
for (let i = 0; i < samples.length; i++) selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + (deltas[i + 1] ?? 0));

const byFunction = new Map<string, number>();
const byPackage = new Map<string, number>();
let busy = 0;
for (const [id, us] of selfUs) {
  const node = byId.get(id)!;
  const name = node.callFrame.functionName || '(anonymous)';
  if (name === '(idle)' || name === '(program)') continue;
  busy += us;
  const where = node.callFrame.url
    ? `${relative(process.cwd(), node.callFrame.url.replace('file://', ''))}:${node.callFrame.lineNumber + 1}`
    : '';
  const key = `${name} ${where}`.trim();
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  const pkg = name === '(garbage collector)' ? '(gc)' : packageOf(node.callFrame.url);
  byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
}

// Inclusive time per function: a node's self time counts for every distinct function on its
// stack, once even when recursive.
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
const keyOf = (node: ProfileNode) => {
  const name = node.callFrame.functionName || '(anonymous)';
  const where = node.callFrame.url
    ? `${relative(process.cwd(), node.callFrame.url.replace('file://', ''))}:${node.callFrame.lineNumber + 1}`
    : '';
  return `${name} ${where}`.trim();
};
const inclusive = new Map<string, number>();
for (const [id, us] of selfUs) {
  const self = byId.get(id)!;
  if (['(idle)', '(program)'].includes(self.callFrame.functionName)) continue;
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
    const key = keyOf(byId.get(at)!);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + us);
  }
}

const total = profile.endTime - profile.startTime;
const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
process.stdout.write(
  `${file}\nprofiled ${(total / 1e6).toFixed(1)} s, busy ${(busy / 1e6).toFixed(1)} s (${((100 * busy) / total).toFixed(0)}%)\n\nby package (self time):\n`,
);
for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 15))
  process.stdout.write(`  ${pct(us)}  ${pkg}\n`);
process.stdout.write(`\nby function (self time), top ${top}:\n`);
for (const [fn, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top))
  process.stdout.write(`  ${pct(us)}  ${fn}\n`);
process.stdout.write(`\nby function (inclusive time), top ${top}:\n`);
for (const [fn, us] of [...inclusive]
  .filter(([fn]) => !fn.startsWith('(root)'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  process.stdout.write(`  ${pct(us)}  ${fn}\n`);
