import type { AdminSite } from './page.ts';
import { registerFixedPages } from './pages/index.ts';

/**
 * The hand-written pages the product names (dashboard, health, gallery, tenant switcher, roles),
 * from framework/admin/pages/. Each registers its routes with registerAdminPage(site, ...).
 */
export type AdminPagesRegistrar = (site: AdminSite) => void;

export const FIXED_PAGES: readonly AdminPagesRegistrar[] = [registerFixedPages];
