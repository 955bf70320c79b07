import type { FastifyBaseLogger } from 'fastify';
import type { Access } from '../entity/define.ts';
import type { ServedSidebarEntry, SidebarEntry } from '../contracts/admin.ts';

export type { ServedSidebarEntry, SidebarEntry } from '../contracts/admin.ts';

/** The entries the installed modules contribute (ModuleDefinition.admin.sidebar), by `order`, then module order. */
export function moduleSidebarEntries(
  modules: readonly { admin?: { sidebar?: readonly SidebarEntry[] } }[],
): SidebarEntry[] {
  return modules.flatMap((module) => module.admin?.sidebar ?? []).sort((a, b) => a.order - b.order);
}

/**
 * Pairs each entry with the access of the GET page served at its path, once, after every admin
 * page is registered. An entry whose path no page serves is reported (one warning each, at
 * startup) and left out for good: a link that could only 404 is never shown.
 */
export function resolveSidebar(
  entries: readonly SidebarEntry[],
  pages: ReadonlyMap<string, Access>,
  log: FastifyBaseLogger,
  features: ReadonlyMap<string, string> = new Map(),
): ServedSidebarEntry[] {
  const served: ServedSidebarEntry[] = [];
  for (const entry of entries) {
    const access = pages.get(entry.path);
    if (access === undefined) {
      log.warn(
        { entry: entry.label, path: entry.path },
        `admin sidebar: no route serves ${entry.path}; the ${entry.label} entry is not shown`,
      );
      continue;
    }
    const feature = features.get(entry.path);
    served.push({ ...entry, access, ...(feature !== undefined ? { feature } : {}) });
  }
  return served;
}
