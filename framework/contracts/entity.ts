import type { TObject, TSchema, TString } from 'typebox';
import type { AnyEntity, DeleteMode, EntityScope } from '../entity/entity-definition.ts';

/**
 * An entity as the framework works with it once resolved at boot (framework/entity/resolve.ts):
 * every derived name, column and schema, beside the declaration itself.
 */

/** The entity's schemas in the OpenAPI document's components.schemas: Task, TaskCreate, TaskUpdate, TaskPage, TaskAssign. */
export interface SchemaNames {
  /** The row as read. */
  read: string;
  /** The create body (a singleton's PUT body too). */
  create: string;
  /** The PATCH body. */
  update: string;
  /** A list's answer. */
  page: string;
  /** A command's body. */
  command(command: string): string;
}

export interface EntityNames {
  key: string;
  plural: string;
  table: string;
  /** The collection's path, or a singleton's (singular) resource path. */
  path: string;
  label: string;
  labelPlural: string;
  adminPath: string;
  events: { created: string; updated: string; deleted: string };
  operationId(verb: string): string;
  schemas: SchemaNames;
}

/** One route an entity serves: the verb (its operation id's last part), method and OpenAPI path. */
export interface EntityEndpoint {
  verb: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
}

/** An entity with every derived name, column and schema worked out once at boot. */
export interface ResolvedEntity {
  def: AnyEntity;
  module: string;
  name: string;
  names: EntityNames;
  scope: EntityScope;
  singleton: boolean;
  deleteMode: DeleteMode;
  fields: string[];
  /** field → column */
  columns: Record<string, string>;
  writable: string[];
  patchable: string[];
  immutable: string[];
  /** field → the first command owning it (the catalog's and the refusal's `route`). */
  commandOwned: Record<string, string>;
  /** field → every command that writes it, in declaration order. */
  commandOwners: Record<string, readonly string[]>;
  /** Fields only the service sets: refused on create and PATCH. */
  readOnly: string[];
  /** Response-only fields afterRead adds. */
  computed: string[];
  sortable: string[];
  /** Fields the list's `q` searches: the declared searchable fields, else the admin title when it is a string. */
  searchable: string[];
  /** Every route the entity serves, generic and command routes, in registration order. */
  endpoints: EntityEndpoint[];
  schemas: {
    row: TSchema;
    create: TSchema;
    patch: TSchema;
    list: TSchema;
    /** A list's parameters: paging, sort, q, the filters, or, fields and expand (framework/query/query-schema.ts). */
    listQuery: TSchema;
    /** A read by id's parameters: fields and expand. */
    readQuery: TSchema;
    /** A record's path parameters: its id (typed, so the generated pages read `params.id`). */
    idParams: TObject<{ id: TString }>;
    /** Any subset of the fields (optional ones nullable), closed: what a command or hook may store. */
    changes: TSchema;
  };
  commandRoute(command: string): string;
}
