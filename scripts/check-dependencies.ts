/**
 * npm run check:deps (a part of npm run check)
 *
 * Fails when package.json does not declare exactly what is imported: a package the production code
 * loads that is not a runtime dependency, one imported anywhere and not declared, a runtime
 * dependency nothing in production loads, a development dependency nothing uses. The rules are in
 * scripts/dependencies/declared-imports.ts. Prints one line per difference.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { dependencyDifferences } from './dependencies/declared-imports.ts';

const { values } = parseArgs({ options: { root: { type: 'string', default: '.' } } });
const differences = await dependencyDifferences(resolve(values.root));
if (differences.length > 0) {
  process.stderr.write(
    `package.json does not declare exactly what is imported:\n${differences.map((d) => `  ${d}\n`).join('')}`,
  );
  process.exitCode = 1;
} else process.stdout.write('package.json declares exactly what is imported.\n');
