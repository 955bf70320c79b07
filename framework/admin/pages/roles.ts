import Type from 'typebox';
import { renderTemplate } from '../render.ts';
import { registerAdminPage, type AdminPageContext, type AdminSite } from '../page.ts';
import { FORM_TOKEN_FIELD } from '../../access/form-token.ts';
import { notFound, type ProblemError } from '../../errors.ts';
import { pageQuerySchema, type PageQuery } from '../../operations/paging.ts';
import { ROLE_NAME_PATTERN, listRoles, readRole, setRole } from '../../../modules/auth/roles.routes.ts';
import { permissionChoices, postedPermissions } from './roles-data.ts';

const access = { permission: 'role:manage' };
const RoleParams = Type.Object({ name: Type.String({ pattern: ROLE_NAME_PATTERN }) });
const RoleListQuery = pageQuerySchema({ sorts: ['name'], defaultSort: 'name' });
const rolePath = (name: string) => `/admin/auth/roles/${encodeURIComponent(name)}`;

/**
 * The roles pages, guarded like the roles API (role:manage): the list, and one form per role with
 * a checkbox per permission the modules define. The form posts to its own path and runs the roles
 * module's setRole, the operation PUT /api/v1/auth/roles/{name} runs, so the same rules refuse
 * the same lists (an unknown permission, an operator permission in a customer role); a refusal
 * comes back as the form again, with the problem's errors beside the boxes they name.
 */
export function registerRolePages(site: AdminSite): void {
  registerAdminPage(site, {
    path: '/admin/auth/roles',
    access,
    summary: 'Roles',
    schema: { querystring: RoleListQuery },
    handler: async (page) => {
      const query = page.query as unknown as PageQuery;
      const roles = await listRoles(page.tx, query);
      const nextHref = roles.next ? `/admin/auth/roles?${new URLSearchParams({ limit: String(query.limit), sort: query.sort, after: roles.next })}` : null;
      return page.render({ title: 'Roles', body: renderTemplate('./admin/pages/roles', { page: roles, nextHref }) });
    },
  });

  registerAdminPage(site, {
    path: '/admin/auth/roles/:name',
    access,
    summary: 'Edit a role',
    schema: { params: RoleParams, querystring: Type.Object({ saved: Type.Optional(Type.String({ maxLength: 1 })) }) },
    handler: async (page) => {
      const role = await readRole(page.tx, page.params.name!);
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
      const name = page.params.name!;
      // The form edits roles that exist; a new role is made through the API.
      if (!(await readRole(page.tx, name))) throw notFound();
      await setRole(page.tx, site.services.registry, name, postedPermissions(page.body));
      return page.redirect(`${rolePath(name)}?saved=1`);
    },
    onError: async (page, problem) => {
      if (problem.status !== 422) throw problem;
      return renderForm(page, page.params.name!, postedPermissions(page.body), { problem, status: 422 });
    },
  });

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
      problem: options.problem ? { detail: options.problem.message, code: options.problem.code } : null,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({ title: `Role ${name}`, body, ...(options.status ? { status: options.status } : {}) });
  }
}
