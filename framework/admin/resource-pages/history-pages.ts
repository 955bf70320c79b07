import { gatedPage } from './page-model.ts';
import Type from 'typebox';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import type { ProblemError } from '../../errors.ts';
import type { Page } from '../../operations/paging.ts';
import type { RevisionItem } from '../../history/record-history.ts';
import { HistoryQuery } from '../../history/history-schemas.ts';
import { runApiRoute as run } from '../api-route.ts';
import { registerAdminPage, type AdminPageContext } from '../page.ts';
import { renderTemplate } from '../render.ts';
import { renderConfirmPage } from './confirm-page.ts';
import {
  actorCells,
  actorWords,
  changeWords,
  fieldWords,
  operationWords,
  whenWords,
  type ActorView,
  type ChangeView,
} from '../history-words.ts';
import { done, requireForm } from './form-posts.ts';
import type { EntityPages } from './entity-pages.ts';
import type { Row } from './resource-api.ts';

/** Revisions a record's page shows; the rest are a link away, on its History page. */
export const DETAIL_REVISIONS = 10;

/** One revision as templates/admin/components/history.eta takes it. */
export interface RevisionView {
  who: ActorView;
  what: string;
  when: { text: string; iso: string };
  changes: ChangeView[];
  /** Its Restore button: the confirmation page, and the post htmx sends after asking. */
  restore?: { href: string; post: string; confirm: string };
}

const RestoreQuery = Type.Object({ revision: Type.String({ format: 'uuid' }) }, { additionalProperties: false });

/** The revisions of a page of history in words, each with its Restore button where the caller may restore. */
async function revisionViews(
  pages: EntityPages,
  ctx: AdminPageContext,
  row: Row,
  revisions: readonly RevisionItem[],
  newest: boolean,
): Promise<RevisionView[]> {
  const { entity, api, label } = pages;
  const people = await actorCells(
    ctx,
    revisions.map((r) => r.actor),
  );
  const words = fieldWords(entity, pages.labelOf);
  const canRestore = api.restore !== undefined && ctx.can(api.restore.access);
  return revisions.map((revision, i) => {
    const who = actorWords(revision.actor, people, ctx.tx.session?.userId ?? null);
    const when = whenWords(revision.at);
    // The newest revision is how the record is now: restoring it would change nothing.
    const current = newest && i === 0;
    return {
      who,
      what: operationWords(entity, revision.operation),
      when,
      changes: changeWords(entity, words, revision),
      ...(canRestore && !current && revision.operation !== 'delete'
        ? {
            restore: {
              href: pages.href(row.id, `/restore?revision=${revision.id}`),
              post: pages.href(row.id, `/restore?revision=${revision.id}`),
              confirm: `Restore this ${label.toLowerCase()} as it was after the change of ${when.text}?`,
            },
          }
        : {}),
    };
  });
}

/**
 * The record's history through the API's history route (its access, row access and paging). By the
 * row's id, not the request's: the answer to a create form (POST /new) shows the new record's page.
 */
async function historyPage(
  pages: EntityPages,
  ctx: AdminPageContext,
  row: Row,
  query: object,
): Promise<Page<RevisionItem>> {
  return (await run(pages.api.history!, ctx, { params: { id: row.id }, query })) as Page<RevisionItem>;
}

/**
 * The History section of a record's page: its newest revisions in words, each with Restore, and a
 * link to the whole history when there is more. Empty where the entity keeps none or the caller may
 * not read it.
 */
export async function historySection(pages: EntityPages, ctx: AdminPageContext, row: Row): Promise<string> {
  const { api } = pages;
  if (!api.history || !ctx.can(api.history.access)) return '';
  const page = await historyPage(pages, ctx, row, { limit: DETAIL_REVISIONS, offset: 0, sort: '-at' });
  return renderTemplate('./admin/components/history', {
    heading: 'History',
    revisions: await revisionViews(pages, ctx, row, page.items, true),
    csrfVals: JSON.stringify({ [FORM_TOKEN_FIELD]: ctx.csrf() }),
    more: page.next ? { href: pages.href(row.id, '/history'), label: 'All changes' } : null,
  });
}

/** /<id>/history (the whole history, paged) and /<id>/restore (its confirmation and its post). */
export function registerHistoryPages(pages: EntityPages): void {
  const { site, entity, api, itemPath, label } = pages;
  if (!api.history) return;
  const history = api.history;
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${itemPath}/history`,
    summary: `${label}: history`,
    access: history.access,
    schema: { params: entity.schemas.idParams, querystring: HistoryQuery },
    handler: async (ctx) => {
      const row = await pages.readRow(ctx);
      const query = ctx.query;
      const page = await historyPage(pages, ctx, row, {
        limit: 20,
        offset: 0,
        sort: '-at',
        ...(query.after ? { after: query.after } : {}),
      });
      const title = `History of ${label.toLowerCase()}: ${pages.titleOf(row)}`;
      const body = renderTemplate('./admin/components/history', {
        heading: 'Changes, newest first',
        revisions: await revisionViews(pages, ctx, row, page.items, query.after === undefined),
        csrfVals: JSON.stringify({ [FORM_TOKEN_FIELD]: ctx.csrf() }),
        more: page.next
          ? { href: `${pages.href(row.id, '/history')}?after=${encodeURIComponent(page.next)}`, label: 'Older changes' }
          : null,
      });
      return ctx.render({
        title,
        template: './admin/generated/page',
        data: { title, content: body, back: pages.href(row.id) },
      });
    },
  });
  const restore = api.restore;
  if (!restore) return;
  const confirmPage = async (ctx: AdminPageContext, p?: ProblemError) => {
    const row = await pages.readRow(ctx);
    const revision = (ctx.query as { revision: string }).revision;
    const title = `Restore ${label.toLowerCase()}: ${pages.titleOf(row)}`;
    return renderConfirmPage(
      ctx,
      title,
      {
        action: pages.href(row.id, `/restore?revision=${encodeURIComponent(revision)}`),
        question: `Restore ${label.toLowerCase()} “${pages.titleOf(row)}” as it was after this change? What its buttons change stays as it is now.`,
        confirmLabel: 'Restore',
        cancelHref: pages.href(row.id),
      },
      p,
    );
  };
  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${itemPath}/restore`,
    summary: `${label}: restore confirmation`,
    access: restore.access,
    schema: { params: entity.schemas.idParams, querystring: RestoreQuery },
    handler: (ctx) => confirmPage(ctx),
  });
  registerAdminPage(site, {
    ...gatedPage(pages),
    method: 'POST',
    path: `${itemPath}/restore`,
    summary: `${label}: restore`,
    access: restore.access,
    schema: { params: entity.schemas.idParams, querystring: RestoreQuery },
    ...(restore.publishes ? { publishes: restore.publishes } : {}),
    handler: async (ctx) => {
      requireForm(ctx.request);
      const revision = ctx.query.revision;
      const outcome = (await run(restore, ctx, { params: ctx.params, body: { revision } })) as { row: Row };
      return done(ctx, pages.href(outcome.row.id));
    },
    onError: async (ctx, p) => (p.status === 409 || p.status === 422 ? confirmPage(ctx, p) : null),
  });
}
