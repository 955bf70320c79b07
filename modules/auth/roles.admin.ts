import Type from 'typebox';
import {
  cursorPager,
  errorView,
  FORM_TOKEN_FIELD,
  ListFilters,
  pageQuerySchema,
  problemText,
  registerAdminPage,
  renderTemplate,
  type AdminPageContext,
  type AdminSite,
  type PageQuery,
} from '../../framework/admin/index.ts';
import { notFound, problem, type ProblemError } from '../../framework/errors.ts';
import { ROLE_NAME_PATTERN, listRoles, readRole, roleList, setRole } from './roles.routes.ts';
import { permissionChoices, postedPermissions } from './roles.admin-data.ts';

const access = { permission: 'role:manage' };
const ROLES_PAGE = '/admin/auth/roles';
const RoleParams = Type.Object({ name: Type.String({ pattern: ROLE_NAME_PATTERN }) });
const RoleListQuery = pageQuerySchema({ sorts: ['name'], defaultSort: 'name' });
const rolePath = (name: string) => `/admin/auth/roles/${encodeURIComponent(name)}`;
const ROLE_NAME = new RegExp(ROLE_NAME_PATTERN);
const NAME_RULE = 'Lower-case letters, digits and _ . : -, starting with a letter or digit; at most 63.';
const FIRST_PAGE: PageQuery = { limit: 20, offset: 0, sort: 'name' };
/**
 * The list's addresses as every list page writes them: the next page keeps the size and sort its
 * cursor was given under, defaults left out. The page offers no filter controls (no field of the
 * roles is of a control's kind).
 */
const listPages = new ListFilters({
  base: ROLES_PAGE,
  model: roleList.model,
  fields: [],
  labelOf: (field) => field,
  defaultSort: FIRST_PAGE.sort,
  defaultLimit: FIRST_PAGE.limit,
});
const postedName = (body: Record<string, unknown>): string => (typeof body.name === 'string' ? body.name.trim() : '');

/** The shell's error page for a refusal a form does not show inline (403, 404). */
function errorPage(page: AdminPageContext, refused: ProblemError): Promise<string> {
  return page.render(errorView(refused));
}

/**
 * The roles pages, guarded like the roles API (role:manage): the list, and one form per role with
 * a checkbox per permission the modules define. The form posts to its own path and runs the roles
 * module's setRole, the operation PUT /api/v1/auth/roles/{name} runs, so the same rules refuse
 * the same lists (an unknown permission, an operator permission in a customer role); a refusal
 * comes back as the form again, with the problem's errors beside the boxes they name. Contributed
 * to the admin shell through the module's `admin.pages` (index.ts).
 */
export function registerRolePages(site: AdminSite): void {
  registerAdminPage(site, {
    path: ROLES_PAGE,
    access,
    summary: 'Roles',
    schema: { querystring: RoleListQuery },
    handler: (page) => renderList(page, page.query, { name: '' }),
  });

  // A new role starts with no permission, then opens in its form. An existing name is refused
  // rather than replaced (the PUT route's create-or-replace is for clients that mean it).
  registerAdminPage(site, {
    method: 'POST',
    path: ROLES_PAGE,
    access,
    summary: 'Create a role',
    publishes: ['auth.role_set'],
    handler: async (page) => {
      const name = postedName(page.body);
      if (!ROLE_NAME.test(name)) {
        throw problem('VALIDATION_FAILED', 'The role’s name is not valid', {
          errors: [{ pointer: '/body/name', message: NAME_RULE }],
        });
      }
      if (await readRole(page.tx, name)) {
        throw problem('ALREADY_EXISTS', `role ${name} already exists`, {
          errors: [{ pointer: '/body/name', message: 'a role of this name exists' }],
          extensions: { field: 'name' },
        });
      }
      await setRole(page.tx, site.services.registry, name, []);
      return page.redirect(rolePath(name));
    },
    onError: (page, refused) => {
      if (refused.status !== 422 && refused.status !== 409) return errorPage(page, refused);
      const error = refused.errors?.find((e) => e.pointer === '/body/name')?.message ?? refused.message;
      return renderList(page, FIRST_PAGE, { name: postedName(page.body), error, status: refused.status });
    },
  });

  registerAdminPage(site, {
    path: '/admin/auth/roles/:name',
    access,
    summary: 'Edit a role',
    schema: { params: RoleParams, querystring: Type.Object({ saved: Type.Optional(Type.String({ maxLength: 1 })) }) },
    handler: async (page) => {
      const role = await readRole(page.tx, page.params.name);
      if (!role) throw notFound();
      return renderForm(page, role.name, role.permissions, { saved: page.query.saved === '1' });
    },
  });

  registerAdminPage(site, {
    method: 'POST',
    path: '/admin/auth/roles/:name',
    access,
    summary: 'Set a role’s permissions',
    publishes: ['auth.role_set'],
    schema: { params: RoleParams },
    handler: async (page) => {
      const name = page.params.name;
      // The form edits roles that exist; a new role is made through the API.
      if (!(await readRole(page.tx, name))) throw notFound();
      await setRole(page.tx, site.services.registry, name, postedPermissions(page.body));
      return page.redirect(`${rolePath(name)}?saved=1`);
    },
    onError: async (page, refused) => {
      // A list the rules refuse (422), or one that would take the tenant's last administrator
      // away (409 LAST_ADMINISTRATOR): the form again, as posted, with the problem's message.
      if (refused.status !== 422 && refused.status !== 409) return errorPage(page, refused);
      return renderForm(page, page.params.name!, postedPermissions(page.body), {
        problem: refused,
        status: refused.status,
      });
    },
  });

  async function renderList(
    page: AdminPageContext,
    query: PageQuery,
    form: { name: string; error?: string; status?: number },
  ): Promise<string> {
    const roles = await listRoles(page.tx, { ...query });
    const asked = listPages.request({ ...page, query: { ...query } });
    const body = renderTemplate('./admin/pages/roles', {
      page: roles,
      pager: cursorPager(asked.nextHref(roles.next)),
      form: { ...form, hint: NAME_RULE },
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({ title: 'Roles', body, ...(form.status ? { status: form.status } : {}) });
  }

  function renderForm(
    page: AdminPageContext,
    name: string,
    held: readonly string[],
    options: { saved?: boolean; problem?: ProblemError; status?: number },
  ): Promise<string> {
    const choices = permissionChoices(site.services.registry, page.tx.tenant, held, options.problem?.errors ?? []);
    const body = renderTemplate('./admin/pages/role-edit', {
      role: { name },
      choices,
      saved: options.saved === true,
      problem: options.problem ? { detail: problemText(options.problem).sentence, code: options.problem.code } : null,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({ title: `Role ${name}`, body, ...(options.status ? { status: options.status } : {}) });
  }
}
