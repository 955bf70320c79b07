import Type from 'typebox';
import { pageQuerySchema, pageSchema } from '../../framework/operations/paging.ts';
import { TENANT_SORTS } from './tenant-store.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

const HostName = Type.String({
  minLength: 1,
  maxLength: 253,
  description:
    'A host name without scheme, port or path, e.g. acme.example.com. Stored lower-cased; a host belongs to one tenant only.',
});

export const TenantHost = Type.Object(
  {
    host: Type.String(),
    primary: Type.Boolean({ description: 'The host mailed links are built on; exactly one per tenant.' }),
  },
  { additionalProperties: false },
);

export const Tenant = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    slug: Type.String(),
    name: Type.String(),
    status: StringEnum(['active', 'suspended'], {
      description: 'active: served on its hosts. suspended: its hosts answer 404 NO_SITE to everybody.',
    }),
    isOperator: Type.Boolean({
      description: 'True for the one operator tenant, the only one whose roles may hold operator permissions.',
    }),
    hosts: Type.Array(TenantHost, { description: 'Primary host first, then in the order they were added.' }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false, title: 'Tenant' },
);

export const TenantList = pageSchema(Tenant, 'A page of tenants');

const PageParameters = pageQuerySchema({
  sorts: TENANT_SORTS,
  defaultSort: 'createdAt',
  sortDescription:
    'createdAt (oldest first, the default), slug or name; a leading "-" sorts descending. Ties break on id, in the same direction.',
});

// Every parameter is optional, as on every list: the list's paging parameters and a search.
export const TenantListQuery = Type.Object(
  {
    ...PageParameters.properties,
    q: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description:
          'Search: only tenants whose name, slug or one of whose hosts contains this text, ignoring case (e.g. q=acme). Combines with sort and after like the unfiltered list; a cursor is followed with the same q.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const HostParams = Type.Object({
  id: Type.String({ description: 'Tenant id (UUID)' }),
  host: Type.String({
    minLength: 1,
    maxLength: 253,
    description: 'One of the tenant’s hosts, as listed in its hosts.',
  }),
});

export const TenantIdParams = Type.Object({ id: Type.String({ description: 'Tenant id (UUID)' }) });

export const CreateTenantBody = Type.Object(
  {
    slug: Type.String({
      pattern: '^[a-z0-9][a-z0-9-]{0,62}$',
      description: 'Short unique name: lower-case letters, digits and dashes, at most 63.',
    }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    host: HostName,
  },
  { additionalProperties: false },
);

export const AddHostBody = Type.Object(
  {
    host: HostName,
    primary: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'Make this the primary host (the previous primary stays, as a plain host). False unless asked.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const InviteAdminBody = Type.Object(
  {
    email: Type.String({ format: 'email', minLength: 3, maxLength: 320 }),
    displayName: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
