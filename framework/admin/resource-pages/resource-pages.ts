import type { AdminSite } from '../page.ts';
import { apiOf, generatedResources } from './resource-api.ts';
import { entityPages } from './entity-pages.ts';
import { registerListPages } from './list-pages.ts';
import { registerImportPages } from './import-pages.ts';
import { registerDeletePages, registerDetailPage, registerEditPages, registerNewPages } from './record-pages.ts';
import { registerCommandPages } from './command-pages.ts';
import { registerHistoryPages } from './history-pages.ts';
import { registerOptionsPage } from './form-aids.ts';
import { entitiesWithPages } from './references.ts';

export { generatedResources } from './resource-api.ts';

/**
 * The generated pages of every entity that has them (resource-api.ts): per entity, the list and
 * its rows fragment, /import and /imports/<id>, /new, /<id>, /<id>/edit, /<id>/delete, one form per command, and /<id>/history
 * and /<id>/restore where the entity keeps history, each running
 * the API route it mirrors in the page's transaction. An entity one of whose five routes runs
 * outside a transaction has none.
 */
export function registerResourcePages(site: AdminSite): void {
  for (const entity of generatedResources(site.services.registry)) {
    const api = apiOf(site.services, entity);
    if (!api) continue;
    const pages = entityPages(site, entity, api);
    // The list links to its import pages (a CSV or NDJSON upload and its progress), where the entity has an import route.
    registerListPages(pages, registerImportPages(pages));
    registerNewPages(pages);
    registerDetailPage(pages);
    registerEditPages(pages);
    registerDeletePages(pages);
    registerCommandPages(pages);
    registerHistoryPages(pages);
    registerOptionsPage(pages, entitiesWithPages(site.services));
  }
}
