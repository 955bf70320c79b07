import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TxContext } from '../context/tx.ts';
import type { AdminPerson } from '../entity/define.ts';
import type { AdminPageContext, AdminSite, AdminView } from '../contracts/admin.ts';
import { renderTemplate } from './render.ts';
import { SHELL_FILES } from './assets.ts';
import { LIVE_STREAM_PATH, badgeOf, headerBadge, type HeaderBadge } from './live-shell.ts';
import { PRODUCT_NAME, isHtmx, refusedAsWholePage } from './html.ts';
import { allows } from './allows.ts';
import { FORM_TOKEN_FIELD } from '../access/form-token.ts';
import { whoAndWhere, type WhoAndWhere } from './who-and-where.ts';
import { grants } from '../contracts/entitlements.ts';

/** The path the header's sign-out form posts to. */
export const SIGN_OUT_PATH = '/admin/logout';
export const LOGIN_PATH = '/admin/login';

export type { AdminView } from '../contracts/admin.ts';

/** What the layout shows around every page. */
export interface ShellModel {
  productName: string;
  title: string;
  cssUrl: string;
  htmxUrl: string;
  faviconUrl: string;
  /**
   * Signed in: the script that follows the page's live changes (assets/live.js) and the one
   * stream it opens for the lists the page names (live.ts).
   */
  live: { script: string; stream: string } | null;
  /**
   * Null for an anonymous page (login, an error before sign-in): no sidebar, no sign-out. Signed
   * in, the header says where (the tenant's name) and who (the person), beside Sign out.
   */
  signedIn: ({ signOutPath: string; csrfField: string; csrf: string } & Partial<WhoAndWhere>) | null;
  /** `locked`: the sentence of an entry the tenant's plan lacks, whose path is then the plans page. */
  sidebar: { label: string; path: string; current: boolean; locked?: string }[];
  /** The module's count (unread notifications); the layout hides it at zero. */
  badge: HeaderBadge | null;
  /** The page's own HTML, already rendered. */
  body: string;
}

/** What a locked sidebar entry says, beside its name. */
const LOCKED_SENTENCE = 'Not in your plan: see the plans that include it.';

/** The page where a plan is chosen (ModuleAdmin.plansPage), when a module offers one. */
function plansPageOf(site: AdminSite): string | undefined {
  return site.services.registry.modules.find((m) => m.admin?.plansPage)?.admin?.plansPage;
}

function personOf(site: AdminSite): AdminPerson | undefined {
  return site.services.registry.modules.find((m) => m.adminPerson)?.adminPerson;
}

/**
 * Renders a page in the layout, in the page's transaction: the sidebar entries this caller may
 * open (the pages' own access, operator check included), the tenant's and the person's names and
 * the badge's count (one query each on tx.db). An htmx request that is not a boosted navigation gets `view.fragment` when there is one.
 */
export async function renderAdminPage(
  site: AdminSite,
  ctx: Pick<AdminPageContext, 'tx' | 'request' | 'reply' | 'csrf'>,
  view: AdminView,
): Promise<string> {
  if (view.status) ctx.reply.code(view.status);
  ctx.reply.type('text/html; charset=utf-8');
  if (view.fragment !== undefined && isHtmx(ctx.request.headers) && ctx.request.headers['hx-boosted'] !== 'true')
    return view.fragment;
  refusedAsWholePage(ctx.request, ctx.reply);
  const body = view.body ?? (view.template ? renderTemplate(view.template, view.data ?? {}) : '');
  return renderTemplate('./admin/layout', await shellModel(site, ctx.tx, ctx.request, ctx.csrf, view.title, body));
}

export async function shellModel(
  site: AdminSite | null,
  tx: TxContext | null,
  request: FastifyRequest,
  csrf: () => string,
  title: string,
  body: string,
): Promise<ShellModel> {
  const path = request.url.split('?', 1)[0]!;
  const session = tx?.session ?? null;
  const badge = site && tx && session ? badgeOf(site) : undefined;
  const who = tx && session ? await whoAndWhere(tx, site ? personOf(site) : undefined) : null;
  return {
    productName: PRODUCT_NAME,
    title,
    // The versioned links, built once at boot: the browser keeps each file until its content changes.
    cssUrl: SHELL_FILES.css.href,
    htmxUrl: SHELL_FILES.htmx.href,
    faviconUrl: SHELL_FILES.favicon.href,
    live: session ? { script: SHELL_FILES.live.href, stream: LIVE_STREAM_PATH } : null,
    signedIn: session
      ? { signOutPath: SIGN_OUT_PATH, csrfField: FORM_TOKEN_FIELD, csrf: csrf(), ...(who ?? {}) }
      : null,
    sidebar:
      site && session
        ? site.sidebar
            .filter((entry) => allows(entry.access, session, tx!.tenant, site.services.registry))
            .map((entry) =>
              // An entry the plan lacks is shown locked, pointing at the page where a plan is chosen: not hidden.
              entry.feature !== undefined && session.entitlements && !grants(session.entitlements, entry.feature)
                ? {
                    label: entry.label,
                    path: plansPageOf(site) ?? entry.path,
                    current: false,
                    locked: LOCKED_SENTENCE,
                  }
                : {
                    label: entry.label,
                    path: entry.path,
                    current: path === entry.path || path.startsWith(`${entry.path}/`),
                  },
            )
        : [],
    badge: badge && tx ? await headerBadge(badge, tx) : null,
    body,
  };
}

/** A page outside any transaction (the login page, errors met before a session was read). */
export function renderAnonymousPage(
  site: AdminSite | null,
  request: FastifyRequest,
  reply: FastifyReply,
  csrf: () => string,
  view: AdminView,
): Promise<string> {
  if (view.status) reply.code(view.status);
  reply.type('text/html; charset=utf-8');
  refusedAsWholePage(request, reply);
  const body = view.body ?? (view.template ? renderTemplate(view.template, view.data ?? {}) : '');
  return shellModel(site, null, request, csrf, view.title, body).then((model) =>
    renderTemplate('./admin/layout', model),
  );
}
