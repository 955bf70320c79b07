import type { AdminPagesRegistrar } from './page.ts';
import { registerFixedPages } from './pages/index.ts';

export type { AdminPagesRegistrar } from './page.ts';

/**
 * The framework's own hand-written pages (dashboard, health, gallery), from framework/admin/pages/.
 * A module adds its pages through its definition's `admin.pages` (docs/module-authoring.md).
 */
export const FIXED_PAGES: readonly AdminPagesRegistrar[] = [registerFixedPages];
