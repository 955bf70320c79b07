import type { AdminBadge } from '../entity/define.ts';
import type { TxContext } from '../context/tx.ts';
import type { AdminSite } from '../contracts/admin.ts';

/*
 * What the shell's layout needs of the live changes (live.ts registers the routes): the stream's
 * and the badge fragment's paths, and the header's badge. Apart from live.ts, so the shell, which
 * every page renders through, imports no route registration (no import cycle through page.ts).
 */

export const LIVE_STREAM_PATH = '/admin/_live/stream';
/** The header's badge, counted again: what assets/live.js swaps in after the badge's list changed. */
export const LIVE_BADGE_PATH = '/admin/_live/badge';
/** The first module's badge: the header has one slot (shell.ts reads the same). */
export function badgeOf(site: AdminSite): AdminBadge | undefined {
  return site.services.registry.modules.find((m) => m.adminBadge)?.adminBadge;
}

/** The header's badge as the layout shows it: hidden at zero; marked with the list it follows, if any. */
export async function headerBadge(badge: AdminBadge, tx: TxContext): Promise<HeaderBadge> {
  return {
    label: badge.label,
    count: await badge.count(tx as TxContext<never>),
    href: badge.href,
    follows: badge.follows?.operationId,
    refresh: LIVE_BADGE_PATH,
  };
}

/** What templates/admin/components/header-badge.eta shows. */
export interface HeaderBadge {
  label: string;
  count: number;
  href: string | undefined;
  /** The operation id of the stream whose changes count it again, if any. */
  follows: string | undefined;
  /** Where the badge is read again. */
  refresh: string;
}
