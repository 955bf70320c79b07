/**
 * The installation: the framework's service command line over this repository's modules.
 * `npm start` runs it (node main.ts --role web|worker|all [--config path]); docs/operations.md.
 * The one place framework and modules meet, so that the framework imports no module.
 */
import './framework/compile-cache.ts';

// Loaded once the compile cache is on (framework/compile-cache.ts): a static import would be compiled before it.
const [{ runService }, { allModules }] = await Promise.all([
  import('./framework/main.ts'),
  import('./modules/index.ts'),
]);
runService(allModules);
