import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import Type from 'typebox';
import { buildApp, migrationSources } from '../../framework/app.ts';
import { BootCheckError } from '../../framework/entity/checks.ts';
import { defineEntity, defineModule, entity, type ModuleDefinition } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import {
  checkTables,
  entityTableProblems,
  type ColumnInfo,
  type TableInfo,
} from '../../framework/entity/table-check.ts';
import { IDENTITY_TABLES } from '../../framework/access/identity-tables.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { createMigratedTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';

const config = testConfig();
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function migrationDir(sql: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-table-check-'));
  dirs.push(dir);
  writeFileSync(join(dir, '0001_tables.sql'), sql);
  return dir;
}

// Each app starts on a copy of the run's template that holds the installation's migrations
// (test/helpers/template-databases.ts), so its boot applies only a drift module's own: what is
// checked is the tables the migrations leave, not how long running them all again takes.
const migratedDatabase = (modules: readonly ModuleDefinition[]) =>
  createMigratedTestDatabase(migrationSources(modules));

async function refusal(modules: readonly ModuleDefinition[], databaseUrl?: string): Promise<Error> {
  const url = databaseUrl ?? (await migratedDatabase(modules));
  const failure = await buildApp({ config, modules, databaseUrl: url, role: 'web', startWorker: false }).then(
    async (app) => {
      await app.close();
      return undefined;
    },
    (err: unknown) => err as Error,
  );
  expect(failure, 'buildApp must refuse to start').toBeInstanceOf(BootCheckError);
  return failure!;
}

async function sql(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** A test module whose one entity is declared one way and migrated another. */
const gadget = defineEntity({
  module: 'drift',
  name: 'gadget',
  fields: {
    label: Type.String({ minLength: 1 }),
    name: Type.String({ minLength: 1 }),
    count: Type.Integer({ minimum: -2147483648, maximum: 2147483647 }),
    note: Type.Optional(Type.String()),
    active: Type.Boolean(),
    tags: Type.Array(Type.String()),
    seenAt: Type.Optional(DateTime()),
    settings: Type.Object({ level: Type.Integer() }),
  },
  permissions: { read: 'gadget:read', write: 'gadget:write' },
});
const driftModule = (migration: string, name = 'drift'): ModuleDefinition =>
  defineModule({
    name,
    permissions: [
      { name: 'gadget:read', description: 'Read gadgets' },
      { name: 'gadget:write', description: 'Write gadgets' },
    ],
    entities: [entity({ ...gadget, module: name })],
    migrations: migrationDir(migration),
  });

const SYSTEM_COLUMNS = `
  id uuid primary key default gen_random_uuid(),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  deleted_at timestamptz`;

describe('definitions and tables agree (boot check)', () => {
  it('passes every entity of the installation and the test kit, and the tables the framework reads', async () => {
    const url = await migratedDatabase([...allModules, testkitModule]);
    const app = await buildApp({
      config,
      modules: [...allModules, testkitModule],
      databaseUrl: url,
      role: 'web',
      startWorker: false,
    });
    try {
      const checked = await checkTables(app.services.db.pool, app.services.registry);
      const declared = [...allModules, testkitModule].flatMap((m) =>
        (m.entities ?? []).map((e) => `${e.module}.${e.name}`),
      );
      expect(checked.entities.sort()).toEqual(declared.sort());
      expect(checked.entities).toEqual(expect.arrayContaining(['user.user', 'testkit.widget']));
      expect(checked.tables).toEqual(
        expect.arrayContaining(['users', 'widgets', ...IDENTITY_TABLES.map((u) => u.table)]),
      );
    } finally {
      await app.close();
    }
  });

  it('refuses to start when an entity’s fields and its table’s columns disagree, naming field and column', async () => {
    const migration = `
      create table gadgets (
        ${SYSTEM_COLUMNS},
        tenant_id uuid not null default app_tenant_id() references tenants (id),
        label text not null,
        name integer not null,
        note text not null,
        active boolean,
        tags jsonb not null default '[]',
        seen_at text,
        settings jsonb not null default '{}'
      );
      call make_tenant_table('gadgets');`;
    const error = await refusal([...allModules, driftModule(migration)]);
    const lines = error.message.split('\n');
    expect(lines[0]).toBe('startup checks failed: definitions and tables disagree:');
    expect(lines.slice(1).sort()).toEqual(
      [
        '- entity drift.gadget: field name is a string, but column gadgets.name is int4 (expected text, varchar, bpchar, citext or uuid)',
        '- entity drift.gadget: field count has no column gadgets.count',
        '- entity drift.gadget: field note is optional, but column gadgets.note is not null and has no default, so a create leaving it out fails',
        '- entity drift.gadget: field active is required, but column gadgets.active allows null',
        '- entity drift.gadget: field tags is an array of strings, but column gadgets.tags is jsonb (expected text[], varchar[], bpchar[], citext[] or uuid[])',
        '- entity drift.gadget: field seenAt is a date-time string, but column gadgets.seen_at is text (expected timestamptz)',
      ].sort(),
    );
    // label and settings agree with their columns, and nothing else is reported.
    expect(error.message).not.toMatch(/field (label|settings)/);
  });

  it('refuses to start when an index the entity declares (indexes) is not in its table, naming the fields and the keys', async () => {
    const migration = `
      create table gadgets (
        ${SYSTEM_COLUMNS},
        tenant_id uuid not null default app_tenant_id() references tenants (id),
        label text not null,
        name text not null,
        count integer not null,
        note text,
        active boolean not null,
        tags text[] not null,
        seen_at timestamptz,
        settings jsonb not null
      );
      call make_tenant_table('gadgets');
      -- Its first field only, and the right fields after another: neither serves the declaration.
      create index gadgets_by_name on gadgets (tenant_id, name, id);
      create index gadgets_by_label_name_count on gadgets (tenant_id, label, name, count, id);`;
    const indexed = defineModule({
      name: 'drift',
      permissions: [
        { name: 'gadget:read', description: 'Read gadgets' },
        { name: 'gadget:write', description: 'Write gadgets' },
      ],
      entities: [entity({ ...gadget, indexes: [['name', 'count']] } as never)],
      migrations: migrationDir(migration),
    });
    const error = await refusal([...allModules, indexed]);
    expect(error.message.split('\n').slice(1)).toEqual([
      '- entity drift.gadget: indexes declares (name, count), but table gadgets has no index on (tenant_id, name, count, ...); npm run migration:new writes it',
    ]);
  });

  it('refuses a tenant-scoped entity whose table has no tenant_id or is not isolated by row-level security', async () => {
    const migration = `
      create table gadgets (
        ${SYSTEM_COLUMNS},
        label text not null, name text not null, count integer not null, note text, active boolean not null,
        tags text[] not null default '{}', seen_at timestamptz, settings jsonb not null
      );`;
    const error = await refusal([...allModules, driftModule(migration, 'loose')]);
    expect(error.message).toContain(
      'entity loose.gadget: table gadgets has no tenant_id column; a tenant-scoped entity needs tenant_id uuid not null default app_tenant_id()',
    );
    expect(error.message).toContain(
      "entity loose.gadget: table gadgets is not isolated by tenant (row-level security enabled, forced, with a policy); call make_tenant_table('gadgets') in its migration",
    );
    expect(error.message).not.toMatch(/field /);
  });

  it('refuses an entity whose table is missing, or lacks the system columns', async () => {
    const missing = await refusal([...allModules, driftModule('select 1;', 'absent')]);
    expect(missing.message).toContain('entity absent.gadget: table gadgets does not exist (no migration creates it)');
    const bare = await refusal([
      ...allModules,
      driftModule(
        `create table gadgets (
          id text primary key, tenant_id uuid not null default app_tenant_id(), created_at timestamptz,
          label text not null, name text not null, count integer not null, note text, active boolean not null,
          tags text[] not null, seen_at timestamptz, settings jsonb not null);
         call make_tenant_table('gadgets');`,
        'bare',
      ),
    ]);
    for (const line of [
      'entity bare.gadget: column gadgets.id is text, expected uuid',
      'entity bare.gadget: column gadgets.id has no default; the framework never sets it on insert',
      'entity bare.gadget: column gadgets.created_at allows null, expected not null',
      'entity bare.gadget: table gadgets has no column updated_at (timestamptz), which every such table needs',
      'entity bare.gadget: table gadgets has no column deleted_at (timestamptz), which every such table needs',
    ]) {
      expect(bare.message).toContain(line);
    }
  });

  it('refuses to start when a migration changed an identity table the framework reads on every request: a column lost or retyped, isolation off', async () => {
    const url = await migratedDatabase(allModules);
    const first = await buildApp({ config, modules: allModules, databaseUrl: url, role: 'web', startWorker: false });
    await first.close();
    await sql(
      url,
      `alter table sessions drop column last_seen_at;
       alter table roles alter column permissions drop default, alter column permissions type jsonb using to_jsonb(permissions);
       alter table users no force row level security;`,
    );
    const error = await refusal(allModules, url);
    expect(error.message).toContain(
      "the framework's identity table sessions (migrations/framework/0013_identity.sql; ",
    );
    expect(error.message).toMatch(
      /identity table sessions \([^)]*\): column sessions\.last_seen_at \(timestamptz\) is missing/,
    );
    expect(error.message).toMatch(
      /identity table roles \([^)]*\): column roles\.permissions is jsonb, expected text\[\]/,
    );
    expect(error.message).toMatch(/identity table users \([^)]*\) is not isolated by tenant/);
  });
});

describe('the table shape an entity asks for', () => {
  const column = (type: string, notNull = true, defaultExpr: string | null = null): ColumnInfo => ({
    type,
    notNull,
    hasDefault: defaultExpr !== null,
    defaultExpr,
  });
  const table = (columns: Record<string, ColumnInfo>, isolated: boolean): TableInfo => ({
    name: 'prices',
    rowSecurity: isolated,
    forcedRowSecurity: isolated,
    policies: isolated ? 1 : 0,
    triggerFunctions: [],
    columns: new Map(Object.entries(columns)),
  });
  const system = {
    id: column('uuid', true, 'gen_random_uuid()'),
    created_at: column('timestamptz', true, 'now()'),
    updated_at: column('timestamptz', true, 'now()'),
  };
  const price = (extra: Record<string, unknown>) =>
    resolveEntity(
      entity(
        defineEntity({
          module: 'plan',
          name: 'price',
          fields: { amount: Type.Integer() },
          permissions: { read: 'r', write: 'w' },
          ...extra,
        }),
      ),
    );

  it('tenant scope with soft delete (the default): tenant_id, forced row-level security and deleted_at', () => {
    const tenantTable = table(
      {
        ...system,
        deleted_at: column('timestamptz', false),
        tenant_id: column('uuid', true, 'app_tenant_id()'),
        amount: column('int4'),
      },
      true,
    );
    expect(entityTableProblems(price({}), tenantTable)).toEqual([]);
    expect(entityTableProblems(price({}), table({ ...system, amount: column('int4') }, false))).toEqual([
      'entity plan.price: table prices has no column deleted_at (timestamptz), which every such table needs',
      'entity plan.price: table prices has no tenant_id column; a tenant-scoped entity needs tenant_id uuid not null default app_tenant_id()',
      "entity plan.price: table prices is not isolated by tenant (row-level security enabled, forced, with a policy); call make_tenant_table('prices') in its migration",
    ]);
  });

  it('a public read needs the trigger that evicts its cached ETags (watch_public_read)', () => {
    const publicPrice = price({ publicRead: { by: 'amount', schema: Type.Object({}), shape: () => ({}) } });
    const tenantTable = table(
      {
        ...system,
        deleted_at: column('timestamptz', false),
        tenant_id: column('uuid', true, 'app_tenant_id()'),
        amount: column('int4'),
      },
      true,
    );
    expect(entityTableProblems(publicPrice, tenantTable)).toEqual([
      "entity plan.price: table prices has no trigger evicting the public read's cached ETags; its migration must call watch_public_read('prices')",
    ]);
    expect(
      entityTableProblems(publicPrice, { ...tenantTable, triggerFunctions: ['tenantry_public_read_changed'] }),
    ).toEqual([]);
  });

  it('global scope and hard delete: no tenant_id, no row-level security, no deleted_at', () => {
    const globalHard = price({ scope: 'global', storage: { deleteMode: 'hard' } });
    expect(entityTableProblems(globalHard, table({ ...system, amount: column('int4') }, false))).toEqual([]);
    expect(
      entityTableProblems(
        globalHard,
        table({ ...system, tenant_id: column('uuid', true, 'app_tenant_id()'), amount: column('int4') }, true),
      ),
    ).toEqual([
      'entity plan.price: the entity is global but table prices has a tenant_id column',
      'entity plan.price: the entity is global but table prices has row-level security, which would hide rows from other tenants',
    ]);
  });
});
