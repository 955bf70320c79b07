/**
 * Imported first by every entry point that builds the app (main.ts; the npm commands through
 * `node --import ./framework/compile-cache.ts`): turns on Node's module compile cache, so a process
 * after the first reuses what Node compiled of each file (type stripping included) instead of doing
 * it again. A start loads some 2,000 modules and their compilation was about a third of a start's
 * CPU (docs/performance.md, "What a process costs before it is ready").
 *
 * The cache lives in os.tmpdir()/node-compile-cache, or where NODE_COMPILE_CACHE says;
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off. Node checks each entry against the file's content, so
 * a changed file is compiled again; a cache it cannot write is only slower, never an error.
 * It covers only what is loaded after this module runs: an entry point that imports it must load
 * the rest dynamically, since static imports are compiled before any module's body runs.
 */
import { enableCompileCache } from 'node:module';

enableCompileCache();
