import { defineRoute, entity, type AnyRoute } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { createTenant, withinTenant } from '../../framework/tenancy/create-tenant.ts';
import {
  addTenantHost,
  evictTenantHosts,
  removeTenantHost,
  resumeTenant,
  setTenantEntitlements,
  suspendTenant,
  tenantEntitlements,
} from '../../framework/tenancy/control-plane.ts';
import { EntitlementOverride } from '../../framework/entitlements/schemas.ts';
import { checkEntitlementNames } from '../../framework/entitlements/limits.ts';
import { notFound, problem } from '../../framework/errors.ts';
import { user } from '../user/user.entity.ts';
import { usersService } from '../user/users-service.ts';
import {
  AddHostBody,
  CreateTenantBody,
  HostParams,
  InviteAdminBody,
  Tenant,
  TenantIdParams,
  TenantList,
} from './tenant.schemas.ts';
import { hostOwner, listTenants, readTenant, tenantRef, tenantList, TenantListQuery } from './tenant-store.ts';
import { selectAnswer } from '../../framework/query/expansion.ts';
import { normaliseHostName } from './host-name.ts';
import { answer } from '../../framework/http/entity-route-parts.ts';

const BASE = '/api/v1/tenant/tenants';
const access = { permission: 'tenant:manage' };
const tags = ['tenant'];
const UserRow = resolveEntity(entity(user)).schemas.row;

// Every route answers only after its transaction committed, and the commit does not depend on
// the answer arriving: a client that hangs up mid-request still gets its write.

const hostTaken = (host: string) =>
  problem('ALREADY_EXISTS', `host ${host} already belongs to a tenant`, { extensions: { field: 'host' } });

export const tenantRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    url: BASE,
    operationId: 'tenant-tenant-list',
    summary: 'List tenants',
    description:
      'Every tenant, with its status and hosts, oldest first unless sort says otherwise; paged like every list (limit and offset, or after=<next> from the previous page, which reads the next page from an index and costs the same at any depth and at any number of tenants; total counted up to 10000). q narrows the list to the tenants whose name, slug or a host contains it, ignoring case; filters narrow it like every list\'s (docs/api-conventions.md, "Filters"): status=eq.suspended, createdAt=gte.now-30d; pass the same q and filters with after.',
    tags,
    access,
    schema: { querystring: TenantListQuery, response: { 200: TenantList } },
    exports: tenantList.exports('tenants'),
    handler: async ({ tx, query, reply }) => {
      const { page, asked } = await listTenants(tx, query as Record<string, unknown>);
      return selectAnswer(reply, page, asked);
    },
  }),
  defineRoute({
    method: 'POST',
    url: BASE,
    operationId: 'tenant-tenant-create',
    summary: 'Create a tenant',
    description:
      'Creates the tenant, its first host (primary) and its seeded roles (admin holding *, member holding nothing, plus the installation’s default roles), and runs every module’s creation hook, all in one transaction: if any step fails, no tenant exists. A taken slug or host is 409 ALREADY_EXISTS. Publishes tenant.created.',
    tags,
    access,
    publishes: ['tenant.created'],
    schema: { body: CreateTenantBody, response: { 201: answer(Tenant, 'The tenant created, with its primary host') } },
    handler: async ({ tx, body, services, reply }) => {
      const host = normaliseHostName(body.host);
      // Stored trimmed: a name of spaces only would be empty, which the name's 1 to 200 refuses.
      const name = body.name.trim();
      if (name === '')
        throw problem('VALIDATION_FAILED', 'name must not be blank', {
          errors: [{ pointer: '/body/name', message: 'must not be blank' }],
        });
      const slugTaken = await tx.db.selectFrom('tenants').select('id').where('slug', '=', body.slug).executeTakeFirst();
      if (slugTaken) throw problem('ALREADY_EXISTS', `slug ${body.slug} is taken`, { extensions: { field: 'slug' } });
      if (await hostOwner(tx, host)) throw hostTaken(host);
      const created = await createTenant(tx, services, { slug: body.slug, name, host });
      tx.publish('tenant.created', { id: created.id, slug: created.slug });
      reply.code(201).header('location', `${BASE}/${created.id}`);
      return readTenant(tx, created.id);
    },
  }),
  defineRoute({
    method: 'GET',
    url: `${BASE}/:id`,
    operationId: 'tenant-tenant-read',
    summary: 'Read a tenant',
    tags,
    access,
    schema: { params: TenantIdParams, response: { 200: answer(Tenant, 'The tenant') } },
    handler: ({ tx, params }) => readTenant(tx, params.id),
  }),
  defineRoute({
    method: 'POST',
    url: `${BASE}/:id/hosts`,
    operationId: 'tenant-tenant-add-host',
    summary: 'Add a host to a tenant',
    description:
      'The new host is not primary unless "primary": true is sent; then it becomes the primary and the previous primary stays as a plain host. A host that belongs to any tenant, this one included, is 409 ALREADY_EXISTS. Publishes tenant.host_added.',
    tags,
    access,
    publishes: ['tenant.host_added'],
    schema: {
      params: TenantIdParams,
      body: AddHostBody,
      response: { 201: answer(Tenant, 'The tenant with the host added') },
    },
    handler: async ({ tx, params, body, reply }) => {
      const tenant = await readTenant(tx, params.id, { lock: true });
      const host = normaliseHostName(body.host);
      if (await hostOwner(tx, host)) throw hostTaken(host);
      const primary = body.primary === true;
      await addTenantHost(tx, tenant.id, host, primary);
      tx.publish('tenant.host_added', { id: tenant.id, host, primary });
      reply.code(201);
      return readTenant(tx, tenant.id);
    },
  }),
  defineRoute({
    method: 'DELETE',
    url: `${BASE}/:id/hosts/:host`,
    operationId: 'tenant-tenant-remove-host',
    summary: 'Remove a host from a tenant',
    description:
      'The host stops naming the tenant in every process as the removal commits (it leaves every resolution cache) and may be given to any tenant afterwards. Removing the primary host makes the oldest remaining host primary. A tenant keeps at least one host: removing its last one is 409 INVALID_STATE. A host the tenant does not have is 404 NOT_FOUND. Publishes tenant.host_removed.',
    tags,
    access,
    publishes: ['tenant.host_removed'],
    schema: { params: HostParams, response: { 200: answer(Tenant, 'The tenant without the host') } },
    handler: async ({ tx, params, services }) => {
      const tenant = await readTenant(tx, params.id, { lock: true });
      const host = params.host.trim().toLowerCase().replace(/\.$/, '');
      const outcome = await removeTenantHost(tx, tenant.id, host);
      if (outcome === 'absent') throw notFound();
      if (outcome === 'last')
        throw problem('INVALID_STATE', 'a tenant keeps at least one host: add another before removing this one');
      await evictTenantHosts(tx, services.hosts, tenant.id);
      tx.publish('tenant.host_removed', { id: tenant.id, host });
      return readTenant(tx, tenant.id);
    },
  }),
  defineRoute({
    method: 'POST',
    url: `${BASE}/:id/invite`,
    operationId: 'tenant-tenant-invite',
    summary: 'Invite a tenant’s administrator',
    description:
      'Creates an invited user holding the role admin in that tenant and publishes user.invited there, on which the worker mails the set-password link built on the tenant’s primary host. Meant for the first administrator; may be repeated for another address. An address already present in the tenant is 409 ALREADY_EXISTS; a suspended tenant is 409 INVALID_STATE.',
    tags,
    access,
    // The invited administrator takes a seat in that tenant (modules/user/invite.ts).
    entitlements: { limit: 'user.seats' },
    publishes: ['user.invited'],
    schema: {
      params: TenantIdParams,
      body: InviteAdminBody,
      response: { 201: answer(UserRow, 'The administrator invited in the tenant') },
    },
    handler: async ({ tx, params, body, reply }) => {
      const tenant = await readTenant(tx, params.id, { lock: true });
      if (tenant.status === 'suspended')
        throw problem('INVALID_STATE', 'a suspended tenant cannot be given an administrator');
      const invited = await withinTenant(tx, tenantRef(tenant), (inner) =>
        usersService.invite(inner, { email: body.email, displayName: body.displayName, roles: ['admin'] }),
      );
      reply.code(201);
      return invited;
    },
  }),
  defineRoute({
    method: 'POST',
    url: `${BASE}/:id/suspend`,
    operationId: 'tenant-tenant-suspend',
    summary: 'Suspend a tenant',
    description:
      'The tenant’s hosts answer 404 NO_SITE from now on, in every process: the hosts leave every resolution cache when the suspension commits. Suspending a suspended tenant changes nothing and publishes nothing. The operator tenant cannot be suspended (409 INVALID_STATE). Publishes tenant.suspended.',
    tags,
    access,
    publishes: ['tenant.suspended'],
    schema: { params: TenantIdParams, response: { 200: answer(Tenant, 'The tenant, suspended') } },
    handler: async ({ tx, params, services }) => {
      const tenant = await readTenant(tx, params.id, { lock: true });
      if (tenant.isOperator) throw problem('INVALID_STATE', 'the operator tenant cannot be suspended');
      if (tenant.status === 'suspended') return tenant;
      await suspendTenant(tx, tenant.id);
      await evictTenantHosts(tx, services.hosts, tenant.id);
      tx.publish('tenant.suspended', { id: tenant.id });
      return readTenant(tx, tenant.id);
    },
  }),
  defineRoute({
    method: 'PUT',
    url: `${BASE}/:id/entitlements`,
    operationId: 'tenant-tenant-entitlements-set',
    summary: "Override a tenant's features or limits",
    description:
      'Sets the operator’s override of this tenant’s entitlements (docs/billing.md, "Entitlements"): `features` replaces the plan’s list, each of `limits` replaces the plan’s value (null lifts the limit). It applies from the tenant’s next request. An empty body clears the override. A name no module declares is 422 VALIDATION_FAILED. Answers the override as stored.',
    tags,
    access,
    schema: {
      params: TenantIdParams,
      body: EntitlementOverride,
      response: { 200: answer(EntitlementOverride, 'The override as stored') },
    },
    handler: async ({ tx, params, body }) => {
      const tenant = await readTenant(tx, params.id, { lock: true });
      checkEntitlementNames(tx, { features: body.features ?? null, limits: body.limits ?? null });
      const override = {
        ...(body.features != null ? { features: body.features } : {}),
        ...(body.limits !== undefined && Object.keys(body.limits).length > 0 ? { limits: body.limits } : {}),
      };
      await setTenantEntitlements(tx, tenant.id, Object.keys(override).length > 0 ? override : null);
      return (await tenantEntitlements(tx, tenant.id)) ?? {};
    },
  }),
  defineRoute({
    method: 'GET',
    url: `${BASE}/:id/entitlements`,
    operationId: 'tenant-tenant-entitlements-read',
    summary: "Read a tenant's entitlement override",
    description:
      'The operator’s override of this tenant’s entitlements as stored (an empty object: none); the tenant itself reads what it is entitled to at GET /api/v1/billing/entitlements.',
    tags,
    access,
    schema: { params: TenantIdParams, response: { 200: answer(EntitlementOverride, 'The override as stored') } },
    handler: async ({ tx, params }) => {
      const tenant = await readTenant(tx, params.id);
      return (await tenantEntitlements(tx, tenant.id)) ?? {};
    },
  }),
  defineRoute({
    method: 'POST',
    url: `${BASE}/:id/resume`,
    operationId: 'tenant-tenant-resume',
    summary: 'Resume a suspended tenant',
    description:
      'The tenant’s hosts are served again from the next request, in every process (the resolution caches hold served tenants only, so none has to be told). Resuming an active tenant changes nothing and publishes nothing. Publishes tenant.resumed.',
    tags,
    access,
    publishes: ['tenant.resumed'],
    schema: { params: TenantIdParams, response: { 200: answer(Tenant, 'The tenant, active') } },
    handler: async ({ tx, params }) => {
      const tenant = await readTenant(tx, params.id, { lock: true });
      if (!(await resumeTenant(tx, tenant.id))) return tenant;
      tx.publish('tenant.resumed', { id: tenant.id });
      return readTenant(tx, tenant.id);
    },
  }),
];
