/**
 * The installation: the framework's service command line over this repository's modules.
 * `npm start` runs it (node main.ts --role web|worker|all [--config path]); docs/operations.md.
 * The one place framework and modules meet, so that the framework imports no module.
 */
import { runService } from './framework/main.ts';
import { allModules } from './modules/index.ts';

runService(allModules);
