import Type, { type TSchema } from 'typebox';
import {
  ADMIN_LIST_SORT,
  cursorPager,
  ListFilters,
  apiRoute,
  csvHref,
  errorView,
  FORM_TOKEN_FIELD,
  newestFirst,
  pagingOf,
  type PageQuery,
  registerAdminPage,
  renderTemplate,
  runApiRoute,
  type AdminPageContext,
  type AdminSite,
  done,
  errorsOf,
  describer,
  formProblem,
  type FormErrors,
} from '../../framework/admin/index.ts';
import type { FieldText } from '../../framework/entity/field-text.ts';
import type { AnyRoute, RouteDefinition } from '../../framework/entity/define.ts';
import type { ProblemError } from '../../framework/errors.ts';
import { validationProblem } from '../../framework/http/problems.ts';
import { typeboxValidatorCompiler } from '../../framework/http/validation.ts';
import { AddHostBody, CreateTenantBody, InviteAdminBody } from './tenant.schemas.ts';
import { TenantListQuery, tenantList } from './tenant-store.ts';
import { titleCase } from '../../framework/entity/names.ts';
import { readTenant } from './tenant-store.ts';
import { requestPort, switcherPage, tenantAdminUrl } from './tenants.admin-data.ts';
import { tenantEntitlements } from '../../framework/tenancy/control-plane.ts';
import { EntitlementOverride } from '../../framework/entitlements/schemas.ts';
import {
  entitlementsForm,
  overrideBody,
  postedOverride,
  storedOverride,
  type OverrideValues,
} from './entitlements-form.ts';

const access = { permission: 'tenant:manage' };
const LIST = '/admin/tenant/tenants';

/** The operator's list filtered as the API's (tenantList): by status and by when a tenant was made. */
const filters = new ListFilters({
  base: LIST,
  model: tenantList.model,
  fields: ['status', 'createdAt'],
  labelOf: (field) =>
    ({ status: 'Status', createdAt: 'Created', name: 'Name', slug: 'Short name' })[field] ?? titleCase(field),
  defaultSort: ADMIN_LIST_SORT,
});
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });
const DetailQuery = Type.Object(
  { done: Type.Optional(Type.String({ maxLength: 20 })) },
  { additionalProperties: false },
);
const tenantPath = (id: string) => `${LIST}/${id}`;

/** What each form's fields read as to people; the slug's and host's rules said in words. */
const TEXTS: Record<string, FieldText> = {
  name: { label: 'Name', hint: 'The customer’s name as people know it, like Acme Corp.' },
  slug: {
    label: 'Short name',
    hint: 'Lowercase letters, digits and hyphens, like acme-corp. It cannot be changed later.',
    messages: {
      pattern:
        'Use lowercase letters, digits and hyphens, starting with a letter or digit, like acme-corp (at most 63).',
    },
  },
  host: {
    label: 'Host',
    hint: 'The address the tenant is served on, like acme.example.com, without https:// or a path.',
  },
  primary: { label: 'Make this the primary host (mailed links are built on it)', hint: '' },
  email: { label: 'Email address', hint: 'The administrator receives a link to choose a password.' },
  displayName: { label: 'Name', hint: 'How the administrator is greeted.' },
};

/** The sentence shown after each action succeeded (?done=...). */
const DONE: Record<string, string> = {
  created: 'The tenant was created.',
  'host-added': 'The host was added.',
  'host-removed': 'The host was removed.',
  suspended: 'The tenant was suspended: its hosts no longer answer.',
  resumed: 'The tenant was resumed: its hosts answer again.',
  invited: 'The invitation was sent.',
  entitlements: 'The plan override was saved. It applies from the tenant’s next request.',
  'entitlements-cleared': 'The plan override was cleared. The tenant gets what its plan grants from its next request.',
};

type FormName = 'create' | 'addHost' | 'invite' | 'action' | 'entitlements';
interface Refusal {
  form: FormName;
  /** The problem's status, which the page answers with (422, 409). */
  status: number;
  errors: FormErrors;
  values: Record<string, string>;
  /** The override form as posted (form 'entitlements'). */
  override?: OverrideValues;
}

/** A posted form field as text (a repeated field, as a checkbox's hidden twin makes, reads its last value). */
const text = (body: Record<string, unknown>, name: string): string => {
  const value = body[name];
  const last = Array.isArray(value) ? value.at(-1) : value;
  return typeof last === 'string' ? last.trim() : '';
};

/** The API body a form makes: only the schema's own fields, blanks of optional ones left out. */
function bodyOf(
  body: Record<string, unknown>,
  fields: readonly string[],
  optional: readonly string[] = [],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const value = text(body, field);
    if (value === '' && optional.includes(field)) continue;
    out[field] = value;
  }
  return out;
}

/**
 * The operator's tenants pages, guarded like the tenant API (tenant:manage, an operator permission):
 * the list (paged by cursor, searched with q, each tenant linked to its own admin) with a form to
 * create a tenant and its first host, and one page per tenant to add and remove hosts, suspend and
 * resume it, invite its first administrator and set or clear its plan override. Every action runs the API route's own handler
 * (runApiRoute) with the route's access and events, after checking the form against the route's
 * body schema as the API would; a refusal comes back as the page again with the form as posted,
 * its messages beside the fields and in plain words (no codes, statuses or patterns). Forms post
 * without JavaScript (post/redirect/get); with htmx they post in place and follow the redirect.
 */
export function registerTenantSwitcher(site: AdminSite): void {
  const route = (operationId: string): RouteDefinition => {
    const found: AnyRoute | undefined = apiRoute(site.services, operationId);
    // Every tenant route runs in the operator's transaction, which the page shares.
    if (!found || found.transaction === 'none')
      throw new Error(`the tenants page needs the API route ${operationId}, run in a transaction`);
    return found;
  };

  /** Checks a form body against an API body schema, answering the API's own problem. */
  const checker = (schema: TSchema) => {
    const check = typeboxValidatorCompiler({ schema, method: 'POST', url: '', httpPart: 'body' });
    return (body: unknown) => {
      const result = check(body) as { error?: never[] };
      if (result.error) throw validationProblem(result.error, 'body');
    };
  };
  const checks = {
    create: checker(CreateTenantBody),
    addHost: checker(AddHostBody),
    invite: checker(InviteAdminBody),
    entitlements: checker(EntitlementOverride),
  };

  const refusal = (
    page: AdminPageContext,
    refused: ProblemError,
    form: FormName,
    schema: TSchema | undefined,
    fields: readonly string[],
    required: readonly string[],
  ): Refusal => ({
    form,
    status: refused.status,
    errors: errorsOf(
      refused,
      fields,
      describer(
        schema,
        page.body,
        (f) => required.includes(f),
        (f) => TEXTS[f],
      ),
    ),
    values: Object.fromEntries(fields.map((f) => [f, text(page.body, f)])),
  });

  // A refusal a form cannot show (403, 404, a server error) is the shell's error page.
  const orErrorPage = async (
    page: AdminPageContext,
    refused: ProblemError,
    render: () => Promise<string>,
  ): Promise<string> => (formProblem(refused) ? render() : page.render(errorView(refused)));

  const listUrl = route('tenant-tenant-list').url;

  async function renderList(page: AdminPageContext, refused?: Refusal): Promise<string> {
    // A refused create answers the list as it opens; the page itself lists as its address filters.
    const asked = filters.request(refused ? ({ ...page, query: {} } as AdminPageContext) : page);
    // The filters travel beside the paging, which pagingOf checks (the search is passed on its own).
    const query: PageQuery = refused
      ? { limit: 20, offset: 0, sort: ADMIN_LIST_SORT }
      : { ...asked.query, ...pagingOf(asked.query), q: undefined };
    const port = requestPort(page.request.headers.host, site.services.config.server.port);
    const q = refused ? '' : typeof page.query.q === 'string' ? page.query.q : '';
    const tenants = await switcherPage(page.tx, query, port, q);
    // Sort and paging links as ListFilters writes them: the search, the filters and the size kept.
    const kept = ListFilters.filtersOf(asked.pairs);
    const body = renderTemplate('./admin/pages/tenants', {
      page: tenants,
      q,
      sorted: { [query.sort.replace(/^-/, '')]: query.sort.startsWith('-') ? 'descending' : 'ascending' },
      sortHref: asked.sortHref,
      pager: cursorPager(asked.nextHref(tenants.next), { first: asked.firstHref }),
      texts: TEXTS,
      refused: refused ?? null,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
      filters: await filters.form(page, asked.pairs, { label: 'Filter the tenants' }),
      keptFilters: kept.map(([name, value]) => ({ name, value })),
      // Every tenant the search and filters match, as CSV (the list's export).
      csvHref: csvHref(listUrl, { ...query, ...(q ? { q } : {}) }),
    });
    return page.render({ title: 'Tenants', body, fragment: body, ...(refused ? { status: refused.status } : {}) });
  }

  async function renderTenant(page: AdminPageContext, refused?: Refusal): Promise<string> {
    const tenant = await readTenant(page.tx, page.params.id!);
    const port = requestPort(page.request.headers.host, site.services.config.server.port);
    const doneKey = typeof page.query.done === 'string' ? page.query.done : '';
    const override = await tenantEntitlements(page.tx, tenant.id);
    const registry = site.services.registry;
    const posted = refused?.form === 'entitlements' ? refused : undefined;
    const body = renderTemplate('./admin/pages/tenant', {
      tenant,
      // The operator's override in words: features by what they give, limits by their unit.
      entitlements: {
        none: override === null,
        features: override?.features
          ? override.features.map((f) => registry.features.get(f)?.description ?? f).join('; ') || 'None'
          : null,
        limits: Object.entries(override?.limits ?? {}).map(([name, value]) => {
          const declared = registry.limits.get(name);
          return {
            label: declared?.description ?? name,
            value: value === null ? 'No limit' : `${value} ${declared?.unit ?? ''}`.trim(),
          };
        }),
      },
      // The form that sets the override: as stored, or as posted when it was refused.
      overrideForm: entitlementsForm(
        registry,
        posted?.override ?? storedOverride(override),
        posted?.errors.fields ?? {},
      ),
      adminUrl: tenantAdminUrl(tenant, port),
      path: tenantPath(tenant.id),
      doneText: refused ? null : (DONE[doneKey] ?? null),
      texts: TEXTS,
      refused: refused ?? null,
      csrf: page.csrf(),
      csrfField: FORM_TOKEN_FIELD,
    });
    return page.render({
      title: `Tenant ${tenant.name}`,
      body,
      fragment: body,
      ...(refused ? { status: refused.status } : {}),
    });
  }

  // After an action: the tenant's page, saying what was done (the API's Location header is not ours to send).
  const after = (page: AdminPageContext, id: string, what: keyof typeof DONE): string => {
    page.reply.removeHeader('location');
    return done(page, `${tenantPath(id)}?done=${what}`);
  };

  registerAdminPage(site, {
    path: LIST,
    access,
    summary: 'Tenants',
    schema: { querystring: filters.pageQuery(newestFirst(TenantListQuery)) },
    handler: async (page) => {
      const asked = filters.request(page);
      if (asked.changed) return page.redirect(asked.href);
      return renderList(page);
    },
  });

  const create = route('tenant-tenant-create');
  registerAdminPage(site, {
    method: 'POST',
    path: LIST,
    access: create.access,
    summary: 'Create a tenant',
    publishes: create.publishes ?? [],
    handler: async (page) => {
      const body = bodyOf(page.body, ['name', 'slug', 'host']);
      checks.create(body);
      const created = (await runApiRoute(create, page, { body })) as { id: string };
      return after(page, created.id, 'created');
    },
    onError: (page, refused) =>
      orErrorPage(page, refused, () =>
        renderList(
          page,
          refusal(page, refused, 'create', CreateTenantBody, ['name', 'slug', 'host'], ['name', 'slug', 'host']),
        ),
      ),
  });

  registerAdminPage(site, {
    path: `${LIST}/:id`,
    access: route('tenant-tenant-read').access,
    summary: 'A tenant',
    schema: { params: IdParams, querystring: DetailQuery },
    handler: (page) => renderTenant(page),
  });

  const addHost = route('tenant-tenant-add-host');
  registerAdminPage(site, {
    method: 'POST',
    path: `${LIST}/:id/hosts`,
    access: addHost.access,
    summary: 'Add a host to a tenant',
    publishes: addHost.publishes ?? [],
    schema: { params: IdParams },
    handler: async (page) => {
      const body = { host: text(page.body, 'host'), primary: text(page.body, 'primary') === 'true' };
      checks.addHost(body);
      await runApiRoute(addHost, page, { params: { id: page.params.id }, body });
      return after(page, page.params.id!, 'host-added');
    },
    onError: (page, refused) =>
      orErrorPage(page, refused, () =>
        renderTenant(page, refusal(page, refused, 'addHost', AddHostBody, ['host', 'primary'], ['host'])),
      ),
  });

  const removeHost = route('tenant-tenant-remove-host');
  registerAdminPage(site, {
    method: 'POST',
    path: `${LIST}/:id/hosts/remove`,
    access: removeHost.access,
    summary: 'Remove a host from a tenant',
    publishes: removeHost.publishes ?? [],
    schema: { params: IdParams },
    handler: async (page) => {
      await runApiRoute(removeHost, page, { params: { id: page.params.id, host: text(page.body, 'host') } });
      return after(page, page.params.id!, 'host-removed');
    },
    onError: (page, refused) =>
      orErrorPage(page, refused, () => renderTenant(page, refusal(page, refused, 'action', undefined, [], []))),
  });

  for (const [action, operationId, what] of [
    ['suspend', 'tenant-tenant-suspend', 'suspended'],
    ['resume', 'tenant-tenant-resume', 'resumed'],
  ] as const) {
    const api = route(operationId);
    registerAdminPage(site, {
      method: 'POST',
      path: `${LIST}/:id/${action}`,
      access: api.access,
      summary: api.summary ?? action,
      publishes: api.publishes ?? [],
      schema: { params: IdParams },
      handler: async (page) => {
        await runApiRoute(api, page, { params: { id: page.params.id } });
        return after(page, page.params.id!, what);
      },
      onError: (page, refused) =>
        orErrorPage(page, refused, () => renderTenant(page, refusal(page, refused, 'action', undefined, [], []))),
    });
  }

  const invite = route('tenant-tenant-invite');
  registerAdminPage(site, {
    method: 'POST',
    path: `${LIST}/:id/invite`,
    access: invite.access,
    summary: 'Invite a tenant’s administrator',
    publishes: invite.publishes ?? [],
    schema: { params: IdParams },
    handler: async (page) => {
      const body = bodyOf(page.body, ['email', 'displayName'], ['displayName']);
      checks.invite(body);
      await runApiRoute(invite, page, { params: { id: page.params.id }, body });
      return after(page, page.params.id!, 'invited');
    },
    onError: (page, refused) =>
      orErrorPage(page, refused, () =>
        renderTenant(page, refusal(page, refused, 'invite', InviteAdminBody, ['email', 'displayName'], ['email'])),
      ),
  });

  // The operator's override of the tenant's plan: the form's features and limits, or cleared.
  const setEntitlements = route('tenant-tenant-entitlements-set');
  registerAdminPage(site, {
    method: 'POST',
    path: `${LIST}/:id/entitlements`,
    access: setEntitlements.access,
    summary: 'Override a tenant’s features or limits',
    publishes: setEntitlements.publishes ?? [],
    schema: { params: IdParams },
    handler: async (page) => {
      const body = overrideBody(site.services.registry, postedOverride(page.body));
      checks.entitlements(body);
      await runApiRoute(setEntitlements, page, { params: { id: page.params.id }, body });
      return after(page, page.params.id!, 'entitlements');
    },
    onError: (page, refused) =>
      orErrorPage(page, refused, () => {
        const errors = errorsOf(refused, [], () => '');
        // A limit's own message (overrideBody's, in words) sits beside that limit.
        const fields: Record<string, string> = {};
        for (const error of refused.errors ?? []) {
          const limit = /^\/body\/limits\/(.+)$/.exec(error.pointer ?? '')?.[1];
          if (limit && site.services.registry.limits.has(limit)) fields[limit] = error.message;
        }
        const marked = Object.keys(fields).length > 0;
        return renderTenant(page, {
          form: 'entitlements',
          status: refused.status,
          errors: marked
            ? {
                fields,
                alert: {
                  ...errors.alert,
                  title: 'Some limits need attention: see the messages beside them.',
                  items: [],
                },
              }
            : errors,
          values: {},
          override: postedOverride(page.body),
        });
      }),
  });

  registerAdminPage(site, {
    method: 'POST',
    path: `${LIST}/:id/entitlements/clear`,
    access: setEntitlements.access,
    summary: 'Clear a tenant’s plan override',
    publishes: setEntitlements.publishes ?? [],
    schema: { params: IdParams },
    handler: async (page) => {
      // An empty body clears the override (the route's rule).
      await runApiRoute(setEntitlements, page, { params: { id: page.params.id }, body: {} });
      return after(page, page.params.id!, 'entitlements-cleared');
    },
    onError: (page, refused) =>
      orErrorPage(page, refused, () => renderTenant(page, refusal(page, refused, 'action', undefined, [], []))),
  });
}
