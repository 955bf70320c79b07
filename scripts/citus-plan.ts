/**
 * npm run citus:plan [-- --config config.yaml]
 *
 * What distributing this installation with Citus by tenant_id takes (docs/operations.md, "Past one
 * PostgreSQL"), read from its database's catalog once its migrations ran: the settings, then
 * create_reference_table and create_distributed_table for each table, in dependency order, and the
 * tables left on the coordinator. It runs none of it. Exit 0 with the plan on stdout; 1, with each
 * breach of the rules on stderr (framework/schema/distribution.ts), when the schema cannot be
 * distributed as it stands, or on a failure; 2 on a usage error.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../framework/config/load.ts';
import type { Config } from '../framework/config/schema.ts';
import type { ModuleDefinition } from '../framework/entity/define.ts';
import {
  distributionPlan,
  distributionProblems,
  readCatalog,
  renderDistributionPlan,
} from '../framework/schema/distribution.ts';
import { openCommandApp, type CommandApp } from './command-database.ts';

const USAGE = 'usage: npm run citus:plan [-- --config config.yaml]';

export interface CitusPlanCommandOptions {
  modules?: readonly ModuleDefinition[];
  config?: Config;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

export async function citusPlanCommand(
  argv: readonly string[],
  options: CitusPlanCommandOptions = {},
): Promise<number> {
  const out = options.out ?? ((text: string) => process.stdout.write(text));
  const err = options.err ?? ((text: string) => process.stderr.write(text));
  let command: CommandApp | undefined;
  try {
    const { values } = parseArgs({ args: [...argv], options: { config: { type: 'string', default: 'config.yaml' } } });
    const config = options.config ?? loadConfig(values.config);
    const modules = options.modules ?? (await import('../modules/index.ts')).allModules;
    // The app on the command's database migrates it: the plan is of the installation's tables.
    command = await openCommandApp(config, { modules });
    const catalog = await readCatalog(command.app.services.db.pool);
    const problems = distributionProblems(catalog);
    if (problems.length > 0) {
      err(
        `citus:plan: the schema cannot be distributed by tenant_id as it stands:\n${problems.map((p) => `  ${p}\n`).join('')}`,
      );
      return 1;
    }
    out(renderDistributionPlan(distributionPlan(catalog)));
    return 0;
  } catch (error) {
    const e = error as Error & { code?: string };
    if (e.code?.startsWith('ERR_PARSE_ARGS')) {
      err(`citus:plan: ${e.message}\n${USAGE}\n`);
      return 2;
    }
    const known = ['ConfigError', 'CommandDatabaseError', 'BootCheckError', 'MigrationError'].includes(e.name);
    err(`citus:plan: ${known ? e.message : (e.stack ?? e.message)}\n`);
    return 1;
  } finally {
    await command?.close();
  }
}

if (import.meta.main) {
  void citusPlanCommand(process.argv.slice(2)).then((code) => process.exit(code));
}
