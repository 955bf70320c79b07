import Type from 'typebox';
import type { NoTxRouteDefinition } from '../../entity/define.ts';
import { notFound, problemDeclaration, type ProblemError } from '../../errors.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import { IMPORT_VERB, importStatusRoute } from '../../bulk/imports/import-routes.ts';
import { REFUSALS_PAGE_MAX } from '../../bulk/imports/import-status.ts';
import { apiRoute, runApiRoute } from '../api-route.ts';
import { registerAdminEffectPage } from '../effect-page.ts';
import { problemText } from '../errors.ts';
import { asSentence } from '../field-messages.ts';
import { registerAdminPage, type AdminPageContext } from '../page.ts';
import { formatBytes } from '../../format.ts';
import { gatedPage } from './page-model.ts';
import type { EntityPages } from './entity-pages.ts';

/** Refused rows a status page lists at once; "Show more" pages on by line. */
const REFUSALS_SHOWN = 100;

const StatusParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const StatusQuery = Type.Object(
  { afterLine: Type.Optional(Type.Integer({ minimum: 0, default: 0 })) },
  { additionalProperties: false },
);

/** An import's state in words. */
const STATES: Readonly<Record<string, string>> = {
  queued: 'Waiting to start.',
  running: 'In progress.',
  done: 'Finished.',
  failed: 'Stopped before the end.',
};

interface ImportAnswer {
  id: string;
  resource: string;
  dryRun: boolean;
  status: string;
  size: number;
  rowsRead: number;
  created: number;
  valid: number;
  refused: number;
  refusals: { line: number; problem: RowProblem }[];
  refusalsNext: number | null;
  problem: RowProblem | null;
}

interface RowProblem {
  code: string;
  detail: string;
  errors?: { pointer: string; message: string }[];
}

/**
 * An entity's import pages, beside its list: /import, a form that uploads a CSV or NDJSON file to
 * the list's import route (POST <list>/import, framework/bulk/imports/) with the form's token
 * checked before the file is read (effect-page.ts), and /imports/<id>, the import's progress as
 * GET /api/v1/imports/{id} reports it: rows read, created and refused, and each refused row's line
 * with a sentence saying what is wrong (the problem's code only in data-code). Without scripts
 * the progress page has a Refresh link. An entity without an import route has no pages.
 */
export function registerImportPages(pages: EntityPages): string | undefined {
  const { site, entity, api, base, labelPlural } = pages;
  const importing = apiRoute(site.services, entity.names.operationId(IMPORT_VERB)) as NoTxRouteDefinition | undefined;
  if (importing?.transaction !== 'none' || !importing.multipart) return undefined;
  // GET /api/v1/imports/{id}, whose handler judges the caller by the import's list (the web app registers it on its own).
  const status = importStatusRoute(site.services.registry);
  const formPath = `${base}/${IMPORT_VERB}`;
  const statusPath = (id: string) => `${base}/imports/${id}`;
  const title = `Import ${labelPlural.toLowerCase()}`;
  const columns = pages.createWidgets.map((widget) => widget.name);

  const renderForm = (ctx: AdminPageContext, refused?: ProblemError) => {
    const text = refused ? problemText(refused) : undefined;
    return ctx.render({
      title,
      template: './admin/generated/import',
      data: {
        title,
        action: formPath,
        columns: columns.join(', '),
        maxSize: formatBytes(site.services.config.files.max_bytes),
        listHref: base,
        alert: refused
          ? { title: text!.sentence, items: text!.detail ? [text!.detail] : [], code: refused.code }
          : null,
        csrf: ctx.csrf(),
        csrfField: FORM_TOKEN_FIELD,
      },
      ...(refused ? { status: refused.status } : {}),
    });
  };

  registerAdminPage(site, {
    ...gatedPage(pages),
    path: formPath,
    access: importing.access,
    summary: `${labelPlural}: import`,
    handler: (ctx) => renderForm(ctx),
  });

  registerAdminEffectPage(site, {
    path: formPath,
    route: importing,
    summary: `${labelPlural}: upload an import`,
    ...(importing.schema.querystring ? { schema: { querystring: importing.schema.querystring } } : {}),
    next: (answer) => statusPath((answer as { id: string }).id),
    onError: (ctx, refused) =>
      refused.status === 403 || refused.status >= 500
        ? Promise.resolve(null)
        : renderForm(ctx, refused as ProblemError),
  });

  registerAdminPage(site, {
    ...gatedPage(pages),
    path: `${base}/imports/:id`,
    access: api.create.access,
    summary: `${labelPlural}: an import's progress`,
    schema: { params: StatusParams, querystring: StatusQuery },
    handler: async (ctx) => {
      const { afterLine } = ctx.query;
      const answer = (await runApiRoute(status, ctx, {
        params: { id: ctx.params.id },
        query: { afterLine, limit: Math.min(REFUSALS_SHOWN, REFUSALS_PAGE_MAX) },
      })) as ImportAnswer;
      // Another list's import is not this page's.
      if (answer.resource !== entity.names.key) throw notFound();
      const over = answer.status === 'done' || answer.status === 'failed';
      const here = statusPath(answer.id);
      return ctx.render({
        title,
        template: './admin/generated/import-status',
        data: {
          title: answer.dryRun ? `${title}: check only` : title,
          state: STATES[answer.status] ?? answer.status,
          failure: answer.problem
            ? { sentence: rowSentence(answer.problem, pages.labelOf), code: answer.problem.code }
            : null,
          dryRun: answer.dryRun,
          size: formatBytes(answer.size),
          rowsRead: answer.rowsRead,
          created: answer.created,
          valid: answer.valid,
          refused: answer.refused,
          refusals: answer.refusals.map((r) => ({
            line: r.line,
            sentence: rowSentence(r.problem, pages.labelOf),
            code: r.problem.code,
          })),
          moreHref: answer.refusalsNext === null ? null : `${here}?afterLine=${answer.refusalsNext}`,
          refreshHref: over ? null : here,
          listHref: base,
          againHref: formPath,
        },
      });
    },
  });
  return formPath;
}

const listed = (names: readonly string[]): string =>
  names.length > 1 ? `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}` : (names[0] ?? '');

/**
 * A refused row's problem as a person reads it: the code's sentence, then the fields to check by
 * their labels (the validator's wording and the pointers stay in the API's answer), or the
 * service's detail when it reads as a sentence.
 */
export function rowSentence(problem: RowProblem, labelOf: (field: string) => string): string {
  const sentence = problemDeclaration(problem.code)?.sentence ?? 'This row was not accepted.';
  const fields = [
    ...new Set(
      (problem.errors ?? []).flatMap((e) => {
        const field = /^(?:\/body)?\/([^/]+)/.exec(e.pointer)?.[1];
        return field ? [field] : [];
      }),
    ),
  ];
  if (fields.length > 0) return `${sentence} Check ${listed(fields.map(labelOf))}.`;
  const detail = asSentence(problem.detail);
  return detail && detail !== sentence ? `${sentence} ${detail}` : sentence;
}
