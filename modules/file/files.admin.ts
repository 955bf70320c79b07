import Type from 'typebox';
import {
  ListFilters,
  cursorPager,
  apiRoute,
  csvHref,
  entityPicker,
  newestFirst,
  registerAdminEffectPage,
  registerAdminPage,
  renderTemplate,
  runApiRoute,
  PAGE_TOOLS_HREF,
  type AdminPageContext,
  type AdminSite,
  FORM_TOKEN_FIELD,
  problemText,
} from '../../framework/admin/index.ts';
import { formatBytes, when } from '../../framework/format.ts';
import type { NoTxRouteDefinition, RouteDefinition } from '../../framework/entity/define.ts';
import { notFound, type ProblemError } from '../../framework/errors.ts';
import { toProblem } from '../../framework/http/problems.ts';
import type { Page } from '../../framework/operations/paging.ts';
import type { FileRecordValue } from './files-table.ts';
import { fileList } from './routes.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';
import { titleCase } from '../../framework/entity/names.ts';

export const FILES_PAGE = '/admin/file/files';
/** The filtered fields and values as the page names them. */
const FIELD_LABELS: Record<string, string> = {
  visibility: 'Who can open it',
  uploadedBy: 'Uploaded by',
  createdAt: 'Uploaded',
};
const VISIBILITY: Record<string, string> = {
  private: 'Signed-in people',
  public: 'Anyone with the link',
};
const PAGE_SIZE = 20;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const DONE = { uploaded: 'The file is uploaded.', deleted: 'The file is deleted.' } as const;
/** The page's own parameter besides the list's: what was just done. */
const PageNotice = { done: Type.Optional(StringEnum(['uploaded', 'deleted'])) };
const UploadQuery = Type.Object({ visibility: StringEnum(['public', 'private']) });
const IdParams = Type.Object({ id: Type.String({ maxLength: 100 }) });

/** A file record as the list route answers it (dates may be Date or ISO text). */
type FileItem = Omit<FileRecordValue, 'createdAt'> & { createdAt: Date | string };

/** After a post: 303 (post/redirect/get); htmx's Delete, which posts no form, is told to navigate there instead. */
function navigate(page: AdminPageContext, location: string): string {
  if (page.request.headers['hx-request'] !== 'true') return page.redirect(location);
  page.reply.code(200).header('hx-redirect', location);
  return '';
}

const fileHref = (id: string, suffix = '') => `${FILES_PAGE}/${encodeURIComponent(id)}${suffix}`;

/**
 * The tenant's files: the list (GET /api/v1/file/files, file:read) with name, size, type,
 * visibility, uploader and date, newest first; download through GET .../{id}/content; for a public
 * file its public link (/api/v1/file/public/{id} on this host) to copy; upload (POST
 * /api/v1/file/files, file:manage) as a plain multipart form, with progress when scripts run
 * (assets/page-tools.js); delete (DELETE .../{id}, file:manage) after a confirmation page (or
 * htmx's confirm). Each page runs the API route with its access.
 */
export function registerFilePages(site: AdminSite): void {
  const route = (operationId: string) => {
    const found = apiRoute(site.services, operationId);
    if (!found) throw new Error(`the file pages need the API route ${operationId}`);
    return found;
  };
  const list = route('file-file-list') as RouteDefinition;
  const read = route('file-file-read') as RouteDefinition;
  const upload = route('file-file-upload') as NoTxRouteDefinition;
  const remove = route('file-file-delete') as RouteDefinition;
  const userRead = apiRoute(site.services, 'user-user-read') as RouteDefinition | undefined;
  // The list's filters as the API's: who can open a file, who uploaded it and when.
  const uploaderPicker = entityPicker(site.services, 'user.user');
  const filters = new ListFilters({
    base: FILES_PAGE,
    model: fileList.model,
    fields: ['visibility', 'uploadedBy', 'createdAt'],
    labelOf: (field) => FIELD_LABELS[field] ?? titleCase(field),
    valueLabel: (field, value) => (field === 'visibility' ? (VISIBILITY[value] ?? value) : value),
    ...(uploaderPicker ? { pickers: { uploadedBy: uploaderPicker } } : {}),
    defaultSort: '-createdAt',
    defaultLimit: PAGE_SIZE,
  });

  registerAdminPage(site, {
    path: FILES_PAGE,
    access: list.access,
    summary: 'Files',
    schema: { querystring: filters.pageQuery(newestFirst(list.schema.querystring!), PageNotice) },
    handler: (page) => renderList(page, {}),
  });

  registerAdminEffectPage(site, {
    path: FILES_PAGE,
    route: upload,
    summary: 'Upload a file',
    schema: { querystring: UploadQuery },
    next: () => `${FILES_PAGE}?done=uploaded`,
    onError: (page, refused) => renderList(page, { refused }),
  });

  registerAdminPage(site, {
    path: `${FILES_PAGE}/:id/delete`,
    access: remove.access,
    summary: 'Delete a file: confirm',
    schema: { params: IdParams },
    handler: async (page) => {
      const file = await readFile(page);
      const body = renderTemplate('./admin/pages/file-delete', {
        file: { name: file.name },
        action: fileHref(file.id, '/delete'),
        cancelHref: FILES_PAGE,
        csrf: page.csrf(),
        csrfField: FORM_TOKEN_FIELD,
      });
      return page.render({ title: `Delete ${file.name}`, body });
    },
  });

  registerAdminPage(site, {
    method: 'POST',
    path: `${FILES_PAGE}/:id/delete`,
    access: remove.access,
    summary: 'Delete a file',
    ...(remove.publishes ? { publishes: remove.publishes } : {}),
    schema: { params: IdParams },
    handler: async (page) => {
      if (!UUID.test(page.params.id!)) throw notFound();
      await runApiRoute(remove, page, { params: { id: page.params.id } });
      return navigate(page, `${FILES_PAGE}?done=deleted`);
    },
  });

  async function readFile(page: AdminPageContext): Promise<FileItem> {
    if (!UUID.test(page.params.id!)) throw notFound();
    return (await runApiRoute(read, page, { params: { id: page.params.id } })) as FileItem;
  }

  /** Who uploaded: the person's name where the caller may read people, "You" for the caller. */
  async function uploaders(page: AdminPageContext, items: readonly FileItem[]): Promise<Map<string, string>> {
    const names = new Map<string, string>();
    const me = page.tx.session?.userId;
    const mayRead = userRead !== undefined && page.can(userRead.access);
    for (const id of new Set(items.map((item) => item.uploadedBy).filter((id): id is string => id !== null))) {
      if (id === me) names.set(id, 'You');
      else if (mayRead) {
        try {
          const user = (await runApiRoute(userRead!, page, { params: { id } })) as {
            displayName?: string | null;
            email: string;
          };
          names.set(id, user.displayName || user.email);
        } catch (err) {
          if (toProblem(err).status !== 404) throw err;
          names.set(id, 'A former member');
        }
      } else names.set(id, 'Another member');
    }
    return names;
  }

  async function renderList(page: AdminPageContext, options: { refused?: ProblemError }): Promise<string> {
    // A refused upload renders the list from its post (no list query): the list as it opens.
    const asked = filters.request(options.refused ? ({ ...page, query: {} } as AdminPageContext) : page);
    if (asked.changed && !options.refused) return page.redirect(asked.href);
    const after = asked.query.after;
    const query = { limit: PAGE_SIZE, offset: 0, ...asked.query };
    const found = (await runApiRoute(list, page, { query })) as Page<FileItem>;
    const names = await uploaders(page, found.items);
    const host = page.request.headers.host ?? '';
    const origin = `${page.request.protocol}://${host}`;
    const manage = page.can(remove.access);
    const refused = options.refused ? problemText(options.refused) : null;
    const done = options.refused ? undefined : (page.query.done as keyof typeof DONE | undefined);
    const body = renderTemplate('./admin/pages/files', {
      items: found.items.map((file) => ({
        id: file.id,
        name: file.name,
        size: formatBytes(file.size),
        type: file.mediaType,
        public: file.visibility === 'public',
        uploader: file.uploadedBy ? (names.get(file.uploadedBy) ?? 'Another member') : 'Nobody (a system upload)',
        at: when(file.createdAt),
        downloadHref: `/api/v1/file/files/${file.id}/content`,
        publicUrl: file.visibility === 'public' ? `${origin}/api/v1/file/public/${file.id}` : null,
        deleteHref: fileHref(file.id, '/delete'),
      })),
      pager: cursorPager(asked.nextHref(found.next), { label: 'Older files' }),
      // Every file the filters match, as CSV (the list's export).
      csvHref: csvHref(list.url, asked.query),
      filters: await filters.form(page, asked.pairs, { label: 'Filter the files' }),
      firstPage: after === undefined,
      manage,
      maxSize: formatBytes(site.services.config.files.max_bytes),
      done: done ? DONE[done] : null,
      refused: refused
        ? { title: refused.sentence, items: refused.detail ? [refused.detail] : [], code: options.refused!.code }
        : null,
      base: FILES_PAGE,
      scriptUrl: PAGE_TOOLS_HREF,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
      // htmx's Delete posts no form: the token travels as its value.
      csrfVals: JSON.stringify({ [FORM_TOKEN_FIELD]: page.csrf() }),
    });
    return page.render({ title: 'Files', body, ...(options.refused ? { status: options.refused.status } : {}) });
  }
}
