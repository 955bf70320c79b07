import type { Change } from './diff.ts';
import type { ColumnSpec, ForeignKeySpec, IndexSpec, TableSpec } from './model.ts';
import { sqlLiteral } from './column-types.ts';

const literal = (value: string | number, column: ColumnSpec) => sqlLiteral(value, column.type);

function enumCheck(column: ColumnSpec): string {
  return `check (${column.name} in (${column.enumValues!.map((v) => literal(v, column)).join(', ')}))`;
}

/** A column as a create table (or an add column) writes it. */
export function columnDefinition(column: ColumnSpec): string {
  if (column.verbatim !== undefined) return `${column.name} ${column.verbatim}`;
  const parts = [column.name, column.type.sql];
  if (column.primaryKey) parts.push('primary key');
  else if (column.notNull) parts.push('not null');
  if (column.defaultExpr) parts.push(`default ${column.defaultExpr}`);
  if (column.default) parts.push(`default ${column.default.sql}`);
  if (column.enumValues) parts.push(enumCheck(column));
  return parts.join(' ');
}

/** A reference's foreign key as a table constraint. */
function foreignKeyDefinition(key: ForeignKeySpec): string {
  return `constraint ${key.name} foreign key (${key.columns.join(', ')}) references ${key.table} (${key.refColumns.join(', ')})`;
}

function foreignKeyComment(key: ForeignKeySpec): string {
  return key.refColumns.length > 1
    ? `-- ${key.field} names a row of ${key.table} in the same tenant: the database refuses another tenant's.`
    : `-- ${key.field} names a row of ${key.table}.`;
}

const tenantRowKeyComment = '-- Other tables name its rows by (tenant_id, id): the key their foreign keys reference.';

function createIndex(table: string, index: IndexSpec): string {
  return `create ${index.unique ? 'unique ' : ''}index ${index.name} on ${table} (${index.keys.join(', ')})${index.where ? ` where ${index.where}` : ''};`;
}

function indexComment(spec: TableSpec, purpose: IndexSpec['purpose']): string {
  const live = spec.softDelete ? ', over live rows' : '';
  if (purpose === 'singleton')
    return `-- One row per tenant${spec.softDelete ? ' among live rows' : ''}: the singleton.`;
  if (purpose === 'unique')
    return `-- Unique${spec.tenantScoped ? ' in the tenant' : ''}${spec.softDelete ? ' among live rows: a delete releases the value' : ''}.`;
  if (purpose === 'declared')
    return `-- The indexes the entity declares (indexes), ties broken by id${live}: filters on their leading fields, sorts or ranges on the next.`;
  const sorts = spec.sorts.join(', ');
  return `-- One index per sort of the list (${sorts}), ties broken by id${live}.`;
}

function indexLines(spec: TableSpec, indexes: readonly IndexSpec[]): string[] {
  const lines: string[] = [];
  let last: IndexSpec['purpose'] | undefined;
  for (const index of indexes) {
    if (index.purpose !== last) lines.push(indexComment(spec, index.purpose));
    last = index.purpose;
    lines.push(createIndex(spec.table, index));
  }
  return lines;
}

function addedIndexComment(index: IndexSpec): string {
  if (index.purpose === 'list') return `-- The list sorts by ${index.field}: its index, ties broken by id.`;
  if (index.purpose === 'declared')
    return `-- The entity declares an index on ${(index.fields ?? []).join(', ')}, ties broken by id.`;
  if (index.purpose === 'unique') return `-- ${index.field} is unique.`;
  return '-- One row per tenant: the singleton.';
}

function describeShape(spec: TableSpec): string {
  return [
    spec.tenantScoped ? 'tenant-owned' : 'global',
    spec.softDelete ? 'soft delete' : 'hard delete',
    ...(spec.publicRead ? ['public read'] : []),
  ].join(', ');
}

function createTable(spec: TableSpec): string[] {
  const lines = [`-- ${spec.entity} (${describeShape(spec)})`, `create table ${spec.table} (`];
  const parts = spec.columns.map((c) => `  ${columnDefinition(c)}`);
  const tenantKey = spec.primaryKey.length > 1;
  if (tenantKey) parts.push(`  primary key (${spec.primaryKey.join(', ')})`);
  // Other tables name its rows by (tenant_id, id): the primary key is that key already.
  else if (spec.tenantRowKey) parts.push(`  constraint ${spec.tenantRowKey} unique (tenant_id, id)`);
  parts.push(...spec.foreignKeys.map((key) => `  ${foreignKeyDefinition(key)}`));
  lines.push(parts.join(',\n'));
  lines.push(');');
  lines.push(...indexLines(spec, spec.indexes));
  if (spec.tenantScoped) lines.push(`call make_tenant_table('${spec.table}');`);
  if (spec.publicRead)
    lines.push(
      `-- Every write evicts the tenant's cached ETags of the public read.`,
      `call watch_public_read('${spec.table}');`,
    );
  return lines;
}

const list = (values: readonly (string | number)[]) =>
  values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v))).join(', ');

function changeLines(change: Change): string[] {
  const t = change.table;
  switch (change.kind) {
    case 'create-table':
      return createTable(change.spec);
    case 'add-column':
      return [`alter table ${t} add column ${columnDefinition(change.column)};`];
    case 'drop-column':
      return [`alter table ${t} drop column ${change.column};`];
    case 'alter-type':
      return [
        `alter table ${t} alter column ${change.column.name} type ${change.column.type.sql} using ${change.column.name}::${change.column.type.sql};`,
      ];
    case 'set-not-null':
      return [`alter table ${t} alter column ${change.column} set not null;`];
    case 'drop-not-null':
      return [`alter table ${t} alter column ${change.column} drop not null;`];
    case 'set-default':
      return [`alter table ${t} alter column ${change.column.name} set default ${change.column.default!.sql};`];
    case 'drop-default':
      return [`alter table ${t} alter column ${change.column} drop default;`];
    case 'replace-check': {
      const name = change.constraint ?? `${t}_${change.column.name}_check`;
      const what = [
        change.added.length ? `adds ${list(change.added)}` : '',
        change.removed.length ? `removes ${list(change.removed)}` : '',
      ]
        .filter(Boolean)
        .join(' and ');
      return [
        ...(change.constraint ? [`-- ${change.column.field}: the check ${what}.`] : []),
        ...(change.constraint ? [`alter table ${t} drop constraint ${change.constraint};`] : []),
        `alter table ${t} add constraint ${name} ${enumCheck(change.column)};`,
      ];
    }
    case 'drop-check':
      return [`alter table ${t} drop constraint ${change.constraint};`];
    case 'add-tenant-row-key':
      return [tenantRowKeyComment, `alter table ${t} add constraint ${change.constraint} unique (tenant_id, id);`];
    case 'tenant-primary-key':
      return [
        '-- The primary key carries tenant_id, as every tenant table\'s does (docs/operations.md, "Past one PostgreSQL").',
        `alter table ${t} drop constraint ${change.constraint}, add constraint ${t}_pkey primary key (tenant_id, id);`,
      ];
    case 'replace-foreign-key':
      return [
        foreignKeyComment(change.key),
        `alter table ${t} ${[
          ...change.drop.map((name) => `drop constraint ${name}`),
          `add ${foreignKeyDefinition(change.key)}`,
        ].join(', ')};`,
      ];
    case 'drop-foreign-key':
      return [
        `-- ${change.column} names no entity any more: its foreign key goes.`,
        `alter table ${t} drop constraint ${change.constraint};`,
      ];
    case 'make-tenant-table':
      return [`call make_tenant_table('${t}');`];
    case 'add-index':
      return [addedIndexComment(change.index), createIndex(t, change.index)];
    case 'drop-index':
      return [
        `-- ${change.index} was derived from the definition, which no longer calls for it.`,
        `drop index ${change.index};`,
      ];
    case 'watch-public-read':
      return [`-- Every write evicts the tenant's cached ETags of the public read.`, `call watch_public_read('${t}');`];
    case 'not-generated':
      return [`-- Not generated: ${change.reason}.`];
  }
}

export interface RenderOptions {
  /** Shown in the header: the command that wrote the file. */
  command: string;
  /** Destructive changes are written (each commented); otherwise they are left out. */
  allowDestructive: boolean;
}

/**
 * The migration's text: a header, then per entity its changes, each destructive one (only with
 * allowDestructive) under a comment saying what it may lose. Undefined when there is nothing to
 * write. The same changes always give the same text.
 */
export function renderMigration(changes: readonly Change[], options: RenderOptions): string | undefined {
  const kept = changes.filter((c) => options.allowDestructive || !c.destructive);
  if (kept.every((c) => c.kind === 'not-generated')) return undefined;
  const out = [
    `-- Generated by \`${options.command}\` from the entity definitions.`,
    '-- Read it before committing it; the service checks the tables against the definitions at every start.',
  ];
  let entity: string | undefined;
  for (const change of kept) {
    if (change.kind !== 'create-table' && change.entity !== entity) out.push('', `-- ${change.entity}`);
    else if (change.kind === 'create-table') out.push('');
    entity = change.entity;
    if (change.destructive) out.push(`-- DESTRUCTIVE (--allow-destructive): ${change.destructive}.`);
    out.push(...changeLines(change));
  }
  return `${out.join('\n')}\n`;
}

/** One line per change left out of the file because it is destructive, for the command's report. */
export function leftOut(changes: readonly Change[], allowDestructive: boolean): string[] {
  if (allowDestructive) return [];
  return changes
    .filter((c) => c.destructive)
    .map(
      (c) =>
        `${c.entity}: ${changeLines(c)
          .filter((l) => !l.startsWith('--'))
          .join(' ')} (${c.destructive})`,
    );
}

/** Changes nobody may generate (a change of scope), for the command's report. */
export function notGenerated(changes: readonly Change[]): string[] {
  return changes.flatMap((c) => (c.kind === 'not-generated' ? [`${c.entity}: ${c.reason}`] : []));
}
