import type {
  ActualCheck,
  ActualForeignKey,
  ActualIndex,
  ActualTable,
  ColumnSpec,
  ForeignKeySpec,
  IndexSpec,
  TableSpec,
} from './model.ts';

/** Created by migrations/framework/0005 (`call watch_public_read(<table>)`). */
export const PUBLIC_READ_TRIGGER_FUNCTION = 'tenantry_public_read_changed';

type Values = readonly (string | number)[];

interface Base {
  entity: string;
  table: string;
  /** Why the change may lose data or fail on existing rows: written only with --allow-destructive. */
  destructive?: string;
}

export type Change = Base &
  (
    | { kind: 'create-table'; spec: TableSpec }
    | { kind: 'add-column'; column: ColumnSpec }
    | { kind: 'drop-column'; column: string }
    | { kind: 'alter-type'; column: ColumnSpec; from: string }
    | { kind: 'set-not-null'; column: string }
    | { kind: 'drop-not-null'; column: string }
    | { kind: 'set-default'; column: ColumnSpec }
    | { kind: 'drop-default'; column: string }
    | { kind: 'replace-check'; column: ColumnSpec; constraint: string | undefined; added: Values; removed: Values }
    | { kind: 'drop-check'; column: string; constraint: string }
    | { kind: 'add-tenant-row-key'; constraint: string }
    | { kind: 'tenant-primary-key'; constraint: string }
    | { kind: 'replace-foreign-key'; key: ForeignKeySpec; drop: readonly string[] }
    | { kind: 'drop-foreign-key'; column: string; constraint: string }
    | { kind: 'make-tenant-table' }
    | { kind: 'add-index'; index: IndexSpec }
    | { kind: 'drop-index'; index: string }
    | { kind: 'watch-public-read' }
    | { kind: 'not-generated'; reason: string }
  );

// Type changes that keep every value and need no cast a reader must check.
const WIDENINGS: Readonly<Record<string, readonly string[]>> = {
  int2: ['int4', 'int8', 'numeric', 'float8'],
  int4: ['int8', 'numeric', 'float8'],
  int8: ['numeric'],
  float4: ['float8'],
  varchar: ['text'],
  bpchar: ['text'],
};

/** The values of a CHECK admitting one column's listed values (`status in ('a', 'b')` as the catalog prints it). */
export function checkValues(check: ActualCheck): Values | undefined {
  if (check.columns.length !== 1) return undefined;
  const column = check.columns[0]!;
  const body = /^CHECK \((.*)\)$/s.exec(check.definition)?.[1]?.trim();
  if (!body) return undefined;
  const strip = (text: string) => text.replace(/^\((.*)\)$/s, '$1');
  const any = new RegExp(`^"?${column}"? = ANY \\(ARRAY\\[(.*)\\]\\)$`, 's').exec(strip(body));
  const one = new RegExp(`^"?${column}"? = (.*)$`, 's').exec(strip(body));
  const list = any?.[1] ?? one?.[1];
  if (list === undefined) return undefined;
  const values: (string | number)[] = [];
  const item = /\s*(?:'((?:[^']|'')*)'(?:::[a-z ]+)?|\(?(-?\d+(?:\.\d+)?)\)?(?:::[a-z ]+)?)\s*(,|$)/gy;
  let rest = list.length;
  for (const match of list.matchAll(item)) {
    values.push(match[1] !== undefined ? match[1].replaceAll("''", "'") : Number(match[2]));
    rest -= match[0].length;
  }
  return rest === 0 && values.length > 0 ? values : undefined;
}

const normalise = (text: string) => text.toLowerCase().replace(/[()"\s]/g, '');

function sameIndex(wanted: IndexSpec, found: ActualIndex): boolean {
  if (wanted.unique && !found.unique) return false;
  if (
    found.keys.length !== wanted.keys.length ||
    found.keys.some((k, i) => normalise(k) !== normalise(wanted.keys[i]!))
  )
    return false;
  return normalise(found.where ?? '') === normalise(wanted.where ?? '');
}

/**
 * Values PostgreSQL handed back (a bigint or numeric as a string, a timestamptz as a Date, a jsonb
 * object with its keys reordered) compared with a definition's.
 */
export function sameValue(wanted: unknown, found: unknown): boolean {
  if (found instanceof Date)
    return (typeof wanted === 'string' || wanted instanceof Date) && new Date(wanted).getTime() === found.getTime();
  if (Array.isArray(wanted))
    return Array.isArray(found) && wanted.length === found.length && wanted.every((w, i) => sameValue(w, found[i]));
  if (typeof wanted === 'number')
    return (typeof found === 'number' || typeof found === 'string') && Number(found) === wanted;
  if (typeof wanted === 'object' && wanted !== null) {
    if (typeof found !== 'object' || found === null || Array.isArray(found)) return false;
    const keys = Object.keys(wanted);
    return (
      keys.length === Object.keys(found).length &&
      keys.every(
        (k) => k in found && sameValue((wanted as Record<string, unknown>)[k], (found as Record<string, unknown>)[k]),
      )
    );
  }
  return wanted === found;
}

/**
 * Whether an index is named as desiredTable names what it derives (`<table>_<column>_unique`,
 * `<table>_one_per_tenant`, `<table>_list`, `<table>_by_<column>`, with freeName's `_2`...):
 * the generator's own, which it may drop once the definition stops calling for it. Any other
 * index is a person's, kept whatever the definition says.
 */
export function derivedIndexName(table: string, name: string): boolean {
  if (!name.startsWith(`${table}_`)) return false;
  const rest = name.slice(table.length + 1).replace(/_\d+$/, '');
  return /^(?:[a-z0-9_]+_unique|one_per_tenant|list|by_[a-z0-9_]+)$/.test(rest);
}

function freeName(name: string, taken: Set<string>): string {
  let candidate = name;
  for (let n = 2; taken.has(candidate); n++) candidate = `${name}_${n}`;
  taken.add(candidate);
  return candidate;
}

function columnChanges(spec: TableSpec, column: ColumnSpec, table: ActualTable): Change[] {
  const at = { entity: spec.entity, table: spec.table };
  const found = table.columns.get(column.name)!;
  const changes: Change[] = [];
  if (column.accepted && !column.accepted.has(found.type)) {
    const widening = WIDENINGS[found.type]?.includes(column.type.catalog) === true;
    changes.push({
      ...at,
      kind: 'alter-type',
      column,
      from: found.type,
      ...(widening ? {} : { destructive: `a ${found.type} value may not convert to ${column.type.sql}` }),
    });
  }
  if (column.notNull && !found.notNull) {
    changes.push({ ...at, kind: 'set-not-null', column: column.name, destructive: 'fails while a row holds null' });
  } else if (!column.notNull && found.notNull && found.defaultExpr === null) {
    changes.push({ ...at, kind: 'drop-not-null', column: column.name });
  }
  if (column.default) {
    if (!found.defaultValue || !sameValue(column.default.value, found.defaultValue.value))
      changes.push({ ...at, kind: 'set-default', column });
  } else if (found.defaultValue) {
    changes.push({
      ...at,
      kind: 'drop-default',
      column: column.name,
      destructive: 'a create leaving the field out then stores null, or fails on not null',
    });
  }
  const checks = table.checks
    .map((check) => ({ check, values: checkValues(check) }))
    .filter((c) => c.values && c.check.columns[0] === column.name);
  const current = checks[0];
  if (column.enumValues) {
    const had = current?.values ?? [];
    const added = column.enumValues.filter((v) => !had.includes(v));
    const removed = had.filter((v) => !column.enumValues!.includes(v));
    if (!current || added.length > 0 || removed.length > 0) {
      const narrows = !current
        ? 'a row holding another value makes it fail'
        : removed.length > 0
          ? `a row still holding ${removed.join(', ')} makes it fail`
          : undefined;
      changes.push({
        ...at,
        kind: 'replace-check',
        column,
        constraint: current?.check.name,
        added,
        removed,
        ...(narrows ? { destructive: narrows } : {}),
      });
    }
  } else if (current) {
    changes.push({ ...at, kind: 'drop-check', column: column.name, constraint: current.check.name });
  }
  return changes;
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

const sameForeignKey = (wanted: ForeignKeySpec, found: ActualForeignKey) =>
  found.table === wanted.table &&
  sameList(found.columns, wanted.columns) &&
  sameList(found.refColumns, wanted.refColumns);

/** A unique key over `(tenant_id, id)`, whole-table: what a composite foreign key may reference. */
export const hasTenantRowKey = (table: ActualTable): boolean =>
  table.indexes.some((index) => index.unique && !index.where && sameList(index.keys, ['tenant_id', 'id']));

/**
 * The foreign keys the references call for, against the table's: a missing one is added, a
 * field's key naming another target (or the same without the tenant) replaced; a key the
 * generator would have named (`<table>_<column>_fkey` on a field's column) that no reference
 * calls for any more is dropped. Keys on other columns are a person's and stay.
 */
function foreignKeyChanges(
  spec: TableSpec,
  table: ActualTable,
  actual: ReadonlyMap<string, ActualTable>,
  specs: readonly TableSpec[],
): Change[] {
  const at = { entity: spec.entity, table: spec.table };
  const changes: Change[] = [];
  const fieldColumns = new Set(spec.columns.filter((c) => c.field).map((c) => c.name));
  for (const key of spec.foreignKeys) {
    if (table.foreignKeys.some((found) => sameForeignKey(key, found))) continue;
    const column = key.columns.at(-1)!;
    const target = actual.get(key.table);
    const targetSpec = specs.find((s) => s.table === key.table);
    if (key.refColumns.length > 1 && !targetSpec?.tenantRowKey && target && !hasTenantRowKey(target)) {
      changes.push({
        ...at,
        kind: 'not-generated',
        reason: `${key.field} names a row of ${key.table}, which has no unique (tenant_id, id) for the foreign key: generate its owner's migration first`,
      });
      continue;
    }
    const drop = table.foreignKeys
      .filter((found) => found.columns.includes(column) || found.name === key.name)
      .map((found) => found.name);
    changes.push({ ...at, kind: 'replace-foreign-key', key, drop });
  }
  for (const found of table.foreignKeys) {
    const column = found.columns.at(-1)!;
    if (
      found.name === `${spec.table}_${column}_fkey` &&
      fieldColumns.has(column) &&
      !spec.foreignKeys.some((key) => key.columns.includes(column))
    )
      changes.push({ ...at, kind: 'drop-foreign-key', column, constraint: found.name });
  }
  return changes;
}

/**
 * What it takes to bring the tables to what the definitions call for, in a stable order: per
 * entity (in the module's order), new columns, then changes to existing ones, dropped columns,
 * row-level security, indexes and the public read's trigger. Never drops an index or a check it
 * does not manage, nor a column the storage declares; a change of scope is left to a person.
 */
export function diffTables(
  specs: readonly TableSpec[],
  actual: ReadonlyMap<string, ActualTable>,
  relationNames: ReadonlySet<string>,
): Change[] {
  const keys: Change[] = [];
  const taken = new Set(relationNames);
  const changes: Change[] = [];
  for (const spec of specs) {
    const at = { entity: spec.entity, table: spec.table };
    const table = actual.get(spec.table);
    if (!table) {
      taken.add(spec.table);
      const indexes = spec.indexes.map((index) => ({ ...index, name: freeName(index.name, taken) }));
      const unkeyed = spec.foreignKeys.filter((key) => {
        const target = actual.get(key.table);
        const targetSpec = specs.find((s) => s.table === key.table);
        return key.refColumns.length > 1 && !targetSpec?.tenantRowKey && target && !hasTenantRowKey(target);
      });
      const foreignKeys = spec.foreignKeys.filter((key) => !unkeyed.includes(key));
      changes.push({ ...at, kind: 'create-table', spec: { ...spec, indexes, foreignKeys } });
      for (const key of unkeyed)
        keys.push({
          ...at,
          kind: 'not-generated',
          reason: `${key.field} names a row of ${key.table}, which has no unique (tenant_id, id) for the foreign key: generate its owner's migration first`,
        });
      continue;
    }
    const hasTenant = table.columns.has('tenant_id');
    if (spec.tenantScoped !== hasTenant) {
      changes.push({
        ...at,
        kind: 'not-generated',
        reason: spec.tenantScoped
          ? `the entity is tenant-owned but table ${spec.table} has no tenant_id: which tenant owns each existing row is a person's decision`
          : `the entity is global but table ${spec.table} has a tenant_id: merging the tenants' rows is a person's decision`,
      });
    }
    const added: Change[] = [];
    const altered: Change[] = [];
    for (const column of spec.columns) {
      if (!table.columns.has(column.name)) {
        if (column.name === 'tenant_id') continue;
        // Required with no default, the column cannot be added to a table with rows, and the
        // generator cannot know the rows: written only when a person says so.
        const unfilled =
          column.notNull && !column.default && !column.defaultExpr && column.verbatim === undefined
            ? {
                destructive: `${column.field ?? column.name} is required with no default, so it fails while ${spec.table} has rows: give the field a WithDefault (or make it Optional), or write a backfill after it and run again with --allow-destructive`,
              }
            : {};
        added.push({ ...at, kind: 'add-column', column, ...unfilled });
      } else if (column.field) {
        altered.push(...columnChanges(spec, column, table));
      }
    }
    const wanted = new Set(spec.columns.map((c) => c.name));
    const dropped: Change[] = [...table.columns.keys()]
      .filter((name) => !wanted.has(name) && !(name === 'tenant_id' && !spec.tenantScoped))
      .map((name) => ({ ...at, kind: 'drop-column', column: name, destructive: `the column's values are lost` }));
    changes.push(...added, ...altered, ...dropped);
    if (spec.tenantScoped && hasTenant && !table.rowSecurity && table.policies === 0)
      changes.push({ ...at, kind: 'make-tenant-table' });
    // A tenant table keyed by id alone (made before keys carried the tenant): the key gains tenant_id.
    const primary = table.indexes.find((index) => index.primary);
    if (spec.tenantScoped && hasTenant && primary && !primary.keys.includes('tenant_id'))
      changes.push({ ...at, kind: 'tenant-primary-key', constraint: primary.name });
    if (spec.tenantRowKey && hasTenant && !hasTenantRowKey(table))
      changes.push({ ...at, kind: 'add-tenant-row-key', constraint: freeName(spec.tenantRowKey, taken) });
    // After every table's own changes: a key may name a table this migration creates or gives its unique key.
    keys.push(...foreignKeyChanges(spec, table, actual, specs));
    // An index named as the generator names what it derives, which no wanted index matches: the
    // definition called for it once (a unique field, a sort) and no longer does.
    // An index over a column the definition drops goes with the column (only with --allow-destructive).
    const droppedColumns = dropped.flatMap((c) => (c.kind === 'drop-column' ? [c.column] : []));
    const overDropped = (found: ActualIndex) =>
      found.keys.some((key) => droppedColumns.some((column) => new RegExp(`\\b${column}\\b`).test(key)));
    for (const found of table.indexes) {
      if (
        derivedIndexName(spec.table, found.name) &&
        !overDropped(found) &&
        !spec.indexes.some((index) => sameIndex(index, found))
      ) {
        changes.push({ ...at, kind: 'drop-index', index: found.name });
        taken.delete(found.name);
      }
    }
    for (const index of spec.indexes) {
      if (!table.indexes.some((found) => sameIndex(index, found))) {
        changes.push({ ...at, kind: 'add-index', index: { ...index, name: freeName(index.name, taken) } });
      }
    }
    if (spec.publicRead && !table.triggerFunctions.includes(PUBLIC_READ_TRIGGER_FUNCTION))
      changes.push({ ...at, kind: 'watch-public-read' });
  }
  return [...changes, ...keys];
}
