import type { FastifyBaseLogger } from 'fastify';
import type { Access } from '../entity/define.ts';

/** One navigation entry: a label and the admin path it opens. */
export interface SidebarEntry {
  label: string;
  path: string;
}

/** A served entry: with the access of the page route at its path. */
export interface ServedSidebarEntry extends SidebarEntry {
  access: Access;
}

/** The navigation the product names (SPEC, Authorization), in this order. */
export const SIDEBAR_ENTRIES: readonly SidebarEntry[] = [
  { label: 'Users', path: '/admin/user/users' },
  { label: 'Roles', path: '/admin/auth/roles' },
  { label: 'Content', path: '/admin/content/contents' },
  { label: 'Tasks', path: '/admin/task/tasks' },
  { label: 'Billing', path: '/admin/billing/plans' },
  { label: 'Tenants', path: '/admin/tenant/tenants' },
];

/**
 * Pairs each entry with the access of the GET page served at its path, once, after every admin
 * page is registered. An entry whose path no page serves is reported (one warning each, at
 * startup) and left out for good: a link that could only 404 is never shown.
 */
export function resolveSidebar(entries: readonly SidebarEntry[], pages: ReadonlyMap<string, Access>, log: FastifyBaseLogger): ServedSidebarEntry[] {
  const served: ServedSidebarEntry[] = [];
  for (const entry of entries) {
    const access = pages.get(entry.path);
    if (access === undefined) {
      log.warn({ entry: entry.label, path: entry.path }, `admin sidebar: no route serves ${entry.path}; the ${entry.label} entry is not shown`);
      continue;
    }
    served.push({ ...entry, access });
  }
  return served;
}
