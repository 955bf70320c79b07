import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** One relative import between two of the repository's files. */
export interface ImportEdge {
  from: string;
  to: string;
  /** `import type` / `export type ... from`: erased before Node loads the file, so never loaded. */
  typeOnly: boolean;
}

// A static import or re-export at the start of a line (the code's layout: one statement per line,
// braces may span lines), and a dynamic import of a literal path.
const STATIC = /^[ \t]*(import|export)\s+(type\s+)?(?:[^;'"`]*?\s+from\s+)?['"]([^'"\n]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g;

/** The .ts files under dir (relative to root), recursively. */
export function sourceFiles(root: string, dir: string): string[] {
  const path = join(root, dir);
  if (!statSync(path).isDirectory()) return [dir];
  return readdirSync(path).flatMap((name) => {
    const rel = join(dir, name);
    return statSync(join(root, rel)).isDirectory() ? sourceFiles(root, rel) : name.endsWith('.ts') ? [rel] : [];
  });
}

/** The relative imports of one file (packages are not followed), paths relative to root. */
export function importsOf(root: string, file: string): ImportEdge[] {
  const text = readFileSync(join(root, file), 'utf8');
  const edges: ImportEdge[] = [];
  const add = (specifier: string, typeOnly: boolean) => {
    if (specifier.startsWith('.'))
      edges.push({ from: file, to: relative(root, resolve(root, dirname(file), specifier)), typeOnly });
  };
  for (const m of text.matchAll(STATIC)) add(m[3]!, m[2] !== undefined);
  for (const m of text.matchAll(DYNAMIC)) add(m[1]!, false);
  return edges;
}

/** The cycles of a directed graph: its strongly connected components of more than one node, or a node reaching itself (Tarjan). */
export function cycles(edges: readonly { from: string; to: string }[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set());
    next.get(from)!.add(to);
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const to of next.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || next.get(node)?.has(node)) found.push(component.sort());
  };
  for (const node of next.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** A package specifier's package: `@scope/name` or `name` (a subpath dropped). */
const packageOf = (specifier: string): string =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/**
 * What Node loads with `entry` before any of its code runs: the repository's files reached by
 * static imports (type-only ones are erased, a dynamic import waits for its code to run), and the
 * packages those files import (`node:` built-ins left out; packages' own imports not followed).
 * `entryDynamic`: the entry's own dynamic imports of literal paths count as loaded too, for an
 * entry that makes them unconditionally at its top level (main.ts imports the service that way,
 * once the compile cache is on); the files they reach are still followed by static imports only.
 */
export function loadedWith(
  root: string,
  entry: string,
  options: { entryDynamic?: boolean } = {},
): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const follow = (file: string, specifier: string): void => {
    if (specifier.startsWith('.')) visit(relative(root, resolve(root, dirname(file), specifier)));
    else if (!specifier.startsWith('node:')) packages.add(packageOf(specifier));
  };
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(STATIC)) if (m[2] === undefined) follow(file, m[3]!);
    if (file === entry && options.entryDynamic) for (const m of text.matchAll(DYNAMIC)) follow(file, m[1]!);
  };
  visit(entry);
  return { files, packages };
}
