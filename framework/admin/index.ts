import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import type { AdminSite } from './page.ts';
import { installAdminErrors } from './errors.ts';
import { databaseCheck, type ReadinessCheck } from '../http/probes.ts';
import { registerAssets } from './assets.ts';
import { registerPageTools } from './page-tools.ts';
import { registerLivePages } from './live.ts';
import { registerSignOut } from './sign-out.ts';
import { registerLoginPage } from './login.ts';
import { registerResourcePages } from './resource-pages/resource-pages.ts';
export { renderLoginPage } from './login.ts';
import { moduleSidebarEntries, resolveSidebar, type SidebarEntry } from './sidebar.ts';
import { FIXED_PAGES } from './fixed-pages.ts';
import type { AdminPagesRegistrar } from './page.ts';
import { setShellHeaders } from './csp.ts';
import { registerHostRoot } from './host-root.ts';

export {
  registerAdminPage,
  type AdminPagesRegistrar,
  type AdminSite,
  type AdminPageContext,
  type AdminPageDefinition,
  type AdminErrorRenderer,
} from './page.ts';
export { renderAdminPage, type AdminView } from './shell.ts';
export { renderTemplate } from './render.ts';
export { errorView, problemText } from './errors.ts';
export { allows } from './allows.ts';
export { apiRoute, runApiRoute } from './api-route.ts';
export { registerAdminEffectPage, type AdminEffectPageDefinition, type EffectInput } from './effect-page.ts';
export { PAGE_TOOLS_HREF, PAGE_TOOLS_URL } from './page-tools.ts';
export { generatedResources } from './resource-pages/resource-pages.ts';
// What a hand-written page needs beside registerAdminPage, the helpers the generated pages use
// (docs/module-authoring.md, "Admin pages and sidebar entries"): a list's query and paging, a
// form's token, its refusal beside its fields, its post/redirect/get, and a confirmation page;
// csvHref with the download-csv component for a list's "Download CSV".
export { ADMIN_LIST_SORT, csvHref, cursorPager, newestFirst, pagingOf, type CursorPager } from './list-query.ts';
export { ListFilters, entityPicker, type FilterPreset, type FilterPicker } from './list-filters.ts';
export { pageQuerySchema, type Page, type PageQuery } from '../operations/page-query.ts';
export { FORM_TOKEN_FIELD, issueFormToken } from '../access/form-token.ts';
// A module's HTML page outside the shell (a set-password page, a public feed) answers and links like the shell's.
export { HtmlPage } from './html.ts';
export { LOGIN_PATH } from './shell.ts';
export {
  bodyChecker,
  describer,
  done,
  errorsOf,
  formProblem,
  requireForm,
  type FieldDescriber,
  type FormErrors,
} from './resource-pages/form-posts.ts';
export { renderConfirmPage, type Confirmation } from './resource-pages/confirm-page.ts';
export type { AdminPageSchema, PageParams, PageQueryOf, Validated } from './page.ts';
export { eventCatalog } from './resource-pages/choice-fields.ts';

/** The framework's own sidebar entries: the tenant's activity (framework/admin/pages/activity.ts), for those with audit:read. */
const FRAMEWORK_SIDEBAR: readonly SidebarEntry[] = [{ label: 'Activity', path: '/admin/audit/activity', order: 90 }];

const withFrameworkEntries = (entries: readonly SidebarEntry[]): SidebarEntry[] =>
  [...entries, ...FRAMEWORK_SIDEBAR].sort((a, b) => a.order - b.order);

export interface AdminOptions {
  /** The sidebar's entries (default: those the installed modules contribute, by their order). */
  sidebar?: readonly SidebarEntry[];
  /** The framework's fixed pages (default: FIXED_PAGES); the modules' own pages are registered after them. */
  pages?: readonly AdminPagesRegistrar[];
  /** The checks /ready runs (default: the database check alone). */
  readinessChecks?: readonly ReadinessCheck[];
}

/**
 * The admin shell: every page under /admin in one fastify scope whose errors are HTML pages and
 * whose unknown paths send an anonymous browser to the login page. Pages register through
 * registerAdminPage (the API's route wrapper): the generated resource pages, the framework's fixed
 * pages, then each module's; then the sidebar the modules contribute is resolved once against them.
 */
export async function registerAdmin(
  app: FastifyInstance,
  services: Services,
  options: AdminOptions = {},
): Promise<void> {
  // A browser at the host's root is sent here (host-root.ts); the API's clients keep their 404.
  registerHostRoot(app, services);
  await app.register(
    async (scope) => {
      const readinessChecks = options.readinessChecks ?? [databaseCheck(services)];
      const site: AdminSite = {
        app: scope,
        services,
        pages: new Map(),
        pageFeatures: new Map(),
        routes: new Map(),
        sidebar: [],
        readinessChecks,
      };
      // The shell loads only its own files: scripts and style sheets from /admin/_assets (csp.ts),
      // no inline script, no framing.
      scope.addHook('onRequest', async (request, reply) => {
        setShellHeaders(request, reply);
      });
      installAdminErrors(site);
      registerAssets(scope);
      registerPageTools(scope);
      registerLivePages(site);
      registerLoginPage(site);
      registerSignOut(site);
      registerResourcePages(site);
      for (const register of options.pages ?? FIXED_PAGES) register(site);
      // Each installed module's own pages (ModuleDefinition.admin.pages), in module order.
      for (const module of services.registry.modules) for (const register of module.admin?.pages ?? []) register(site);
      site.sidebar = resolveSidebar(
        options.sidebar ?? withFrameworkEntries(moduleSidebarEntries(services.registry.modules)),
        site.pages,
        services.log,
        site.pageFeatures,
      );
    },
    { prefix: '/admin' },
  );
}
