import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import pg from 'pg';
import Type from 'typebox';
import { allModules } from '../../modules/index.ts';
import { article, gadget, memo, setting, testkitModule, widget } from '../helpers/testkit-module.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { testConfig } from '../helpers/config.ts';
import { migrationSources } from '../../framework/app.ts';
import { runMigrations } from '../../framework/db/migrate.ts';
import { entity, type AnyEntity, type ModuleDefinition } from '../../framework/entity/define.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { Registry } from '../../framework/entity/registry.ts';
import { checkTables } from '../../framework/entity/table-check.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { columnType, sqlLiteral } from '../../framework/schema/column-types.ts';
import { desiredTable, rowAccessFields } from '../../framework/schema/desired.ts';
import { checkValues, sameValue } from '../../framework/schema/diff.ts';
import { nextMigrationFile } from '../../framework/schema/generate.ts';
import { migrationNewCommand, newMigration, rewriteMigrations } from '../../scripts/migration-new.ts';

const INSTALLED = [...allModules, testkitModule].flatMap((m) => m.entities ?? []);
const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const TESTKIT_MIGRATIONS = join(FIXTURES, 'migrations/testkit');
// UPDATE_GOLDEN=1 rewrites the golden file from what the generator writes now (then read the diff).
const GOLDEN = join(FIXTURES, 'migration-gen/testkit_weight_summary_retracted.sql');

describe('from a field schema to a column', () => {
  it('types each kind of field as the boot check accepts it', () => {
    const cases: [unknown, string][] = [
      [Type.String(), 'text'],
      [Type.String({ format: 'uuid' }), 'uuid'],
      [DateTime(), 'timestamptz'],
      [Type.Optional(Type.String({ format: 'date' })), 'date'],
      [Type.Integer({ minimum: 0, maximum: 1000 }), 'integer'],
      [Type.Integer({ maximum: 2 ** 40 }), 'bigint'],
      [Type.Number(), 'double precision'],
      [Type.Boolean(), 'boolean'],
      [Type.Union([Type.Literal('a'), Type.Literal('b')]), 'text'],
      [Type.Union([Type.Literal(1), Type.Literal(2)]), 'integer'],
      [Type.Array(Type.String()), 'text[]'],
      [Type.Array(Type.String({ format: 'uuid' })), 'uuid[]'],
      [Type.Array(Type.Object({ a: Type.String() })), 'jsonb'],
      [Type.Object({ a: Type.String() }), 'jsonb'],
      [Type.Union([Type.String(), Type.Null()]), 'text'],
    ];
    for (const [schema, sql] of cases) expect(columnType(schema as never).sql, JSON.stringify(schema)).toBe(sql);
  });

  it('writes defaults as SQL literals of the column type', () => {
    expect(sqlLiteral("it's", { sql: 'text', catalog: 'text' })).toBe("'it''s'");
    expect(sqlLiteral(false, { sql: 'boolean', catalog: 'bool' })).toBe('false');
    expect(sqlLiteral(0, { sql: 'integer', catalog: 'int4' })).toBe('0');
    expect(sqlLiteral([], { sql: 'text[]', catalog: 'text[]' })).toBe("'{}'");
    expect(sqlLiteral(['a b', 'c"d'], { sql: 'text[]', catalog: 'text[]' })).toBe(`'{"a b","c\\"d"}'`);
    expect(sqlLiteral({ a: 1 }, { sql: 'jsonb', catalog: 'jsonb' })).toBe(`'{"a":1}'`);
  });

  it("reads the values back from the catalog's enum checks, and leaves other checks alone", () => {
    const check = (definition: string) => checkValues({ name: 'c', columns: ['status'], definition });
    expect(check("CHECK ((status = ANY (ARRAY['draft'::text, 'it''s'::text])))")).toEqual(['draft', "it's"]);
    expect(check("CHECK (status = ANY (ARRAY['draft'::text, 'published'::text]))")).toEqual(['draft', 'published']);
    expect(check("CHECK ((status = 'only'::text))")).toEqual(['only']);
    expect(check('CHECK ((status = ANY (ARRAY[1, 2])))')).toEqual([1, 2]);
    expect(check("CHECK (((status ~ '^[a-z]+$'::text) AND (char_length(status) <= 100)))")).toBeUndefined();
    expect(check("CHECK ((status <> ALL (ARRAY['x'::text])))")).toBeUndefined();
  });

  it('compares a default with the value PostgreSQL evaluates it to', () => {
    expect(sameValue(0, '0')).toBe(true);
    expect(sameValue(['a'], ['a'])).toBe(true);
    expect(sameValue({ a: 1, bb: [true] }, { bb: [true], a: 1 })).toBe(true);
    expect(sameValue('2030-01-01T00:00:00.000Z', new Date('2030-01-01T00:00:00Z'))).toBe(true);
    expect(sameValue('draft', 'published')).toBe(false);
    expect(sameValue({ a: 1 }, { a: 1, b: 2 })).toBe(false);
  });

  it('leads the list indexes with the row-access fields, ends them with id, and names unique ones', () => {
    expect(rowAccessFields(entity(memo))).toEqual(['ownerId']);
    const memos = desiredTable(entity(memo), INSTALLED);
    expect(memos.indexes.map((i) => i.keys)).toEqual([
      ['tenant_id', 'owner_id', 'created_at', 'id'],
      ['tenant_id', 'owner_id', 'updated_at', 'id'],
      ['tenant_id', 'owner_id', 'text', 'id'],
    ]);
    expect(memos.indexes.every((i) => i.where === undefined)).toBe(true);
    const gadgets = desiredTable(entity(gadget));
    expect(gadgets.indexes[0]).toEqual({
      name: 'gadgets_code_unique',
      unique: true,
      keys: ['code'],
      where: 'deleted_at is null',
      purpose: 'unique',
      field: 'code',
    });
    expect(gadgets.columns.map((c) => c.name)).not.toContain('tenant_id');
  });

  it("numbers a module's next migration one past its highest", () => {
    expect(nextMigrationFile(TESTKIT_MIGRATIONS, 'Add a Field!')).toBe(
      `${String(readdirSync(TESTKIT_MIGRATIONS).length + 1).padStart(4, '0')}_add_a_field.sql`,
    );
    expect(nextMigrationFile(join(FIXTURES, 'no-such-dir'), 'first')).toBe('0001_first.sql');
  });
});

/** The test kit with some entities replaced, its migrations read from a directory of the test's own. */
function changedTestkit(dir: string, replace: Record<string, AnyEntity>): ModuleDefinition[] {
  const entities = testkitModule.entities!.map((e) => replace[e.name] ?? e);
  return [...allModules, { ...testkitModule, entities, migrations: dir }];
}

/**
 * The golden change: a field added to two entities, an enum value added, two fields made sortable, a
 * default changed, an index declared (indexes).
 */
const goldenEntities = () => ({
  widget: entity({
    ...widget,
    fields: { ...widget.fields, weight: WithDefault(Type.Integer({ minimum: 0, maximum: 2147483647 }), 0) },
    sortable: ['name', 'size', 'color'],
    indexes: [['color', 'size']],
  } as never),
  article: entity({
    ...article,
    fields: {
      ...article.fields,
      status: WithDefault(
        Type.Union([Type.Literal('draft'), Type.Literal('published'), Type.Literal('retracted')]),
        'draft',
      ),
      summary: Type.Optional(Type.String({ maxLength: 300 })),
    },
    sortable: ['slug', 'title'],
  } as never),
  setting: entity({
    ...setting,
    fields: { ...setting.fields, activations: WithDefault(Type.Integer({ minimum: 0, maximum: 2147483647 }), 1) },
  } as never),
});

describe('a change of a test-kit entity', () => {
  let dir: string;
  const adminUrl = () => inject('pgAdminUrl');

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tenantry-migration-gen-'));
    cpSync(TESTKIT_MIGRATIONS, dir, { recursive: true });
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('generates the expected ALTER file, which passes the boot check once applied, after which nothing is generated', {
    timeout: 180_000,
  }, async () => {
    const modules = changedTestkit(dir, goldenEntities());
    const before = readdirSync(dir).length;
    const written = await newMigration('testkit', 'weight summary retracted', {
      allowDestructive: false,
      modules,
      config: testConfig(),
      scratchUrl: adminUrl(),
    });
    expect(written.leftOut).toEqual([]);
    const file = join(dir, nextMigrationFile(TESTKIT_MIGRATIONS, 'weight_summary_retracted'));
    expect(readdirSync(dir)).toHaveLength(before + 1);
    const text = readFileSync(file, 'utf8');
    if (process.env.UPDATE_GOLDEN === '1') writeFileSync(GOLDEN, text);
    expect(text).toBe(readFileSync(GOLDEN, 'utf8'));

    // Applied with the test kit's other migrations, the tables agree with the changed definitions.
    const pool = new pg.Pool({ connectionString: await createTestDatabase('golden'), max: 2 });
    try {
      await runMigrations(pool, migrationSources(modules));
      const checked = await checkTables(pool, new Registry(modules, testConfig()));
      const defaults = await pool.query(
        `select column_default from information_schema.columns where table_name = 'settings' and column_name = 'activations'`,
      );
      expect(defaults.rows).toEqual([{ column_default: '1' }]);
      expect(checked.entities).toContain('testkit.article');
      const { rows } = await pool
        .query<{ weight: number; status: string }>(
          `set app.tenant_id = '00000000-0000-0000-0000-000000000001';
         insert into widgets (name, size, color) values ('w', 1, 'red');
         insert into articles (slug, title, body, status) values ('a', 'A', '', 'retracted');
         select w.weight, a.status from widgets w, articles a`,
        )
        .then((results) => (results as unknown as pg.QueryResult<{ weight: number; status: string }>[]).at(-1)!);
      expect(rows).toEqual([{ weight: 0, status: 'retracted' }]);
    } finally {
      await pool.end();
    }

    // Running the command again generates nothing and writes no file.
    const out: string[] = [];
    const status = await migrationNewCommand(['testkit', 'again'], {
      modules,
      config: testConfig(),
      scratchUrl: adminUrl(),
      out: (t) => out.push(t),
      err: (t) => out.push(t),
    });
    expect({ status, out: out.join('') }).toEqual({ status: 0, out: 'no changes\n' });
    expect(readdirSync(dir)).toHaveLength(before + 1);
  });

  it('writes a destructive change only with --allow-destructive, under a comment, and lists it otherwise', {
    timeout: 180_000,
  }, async () => {
    const destructive = {
      // price dropped; note made required; the article's status narrowed to draft.
      gadget: entity({
        ...gadget,
        fields: { code: gadget.fields.code, name: gadget.fields.name },
        sortable: ['code'],
      } as never),
      widget: entity({ ...widget, fields: { ...widget.fields, note: Type.String({ maxLength: 500 }) } } as never),
      article: entity({
        ...article,
        fields: { ...article.fields, status: WithDefault(Type.Union([Type.Literal('draft')]), 'draft') },
      } as never),
    };
    const destructiveDir = mkdtempSync(join(tmpdir(), 'tenantry-migration-destructive-'));
    try {
      cpSync(TESTKIT_MIGRATIONS, destructiveDir, { recursive: true });
      const modules = changedTestkit(destructiveDir, destructive);
      const options = { modules, config: testConfig(), scratchUrl: adminUrl() };
      const refused = await newMigration('testkit', 'narrow', { ...options, allowDestructive: false });
      expect(refused.file).toBeUndefined();
      expect(refused.leftOut).toEqual([
        'testkit.widget: alter table widgets alter column note set not null; (fails while a row holds null)',
        "testkit.gadget: alter table gadgets drop column price; (the column's values are lost)",
        "testkit.article: alter table articles drop constraint articles_status_check; alter table articles add constraint articles_status_check check (status in ('draft')); (a row still holding published makes it fail)",
      ]);

      const allowed = await newMigration('testkit', 'narrow', { ...options, allowDestructive: true });
      const text = readFileSync(join(destructiveDir, nextMigrationFile(TESTKIT_MIGRATIONS, 'narrow')), 'utf8');
      expect(allowed.file).toBeDefined();
      expect(text).toContain(
        '-- DESTRUCTIVE (--allow-destructive): fails while a row holds null.\nalter table widgets alter column note set not null;',
      );
      expect(text).toContain(
        "-- DESTRUCTIVE (--allow-destructive): the column's values are lost.\nalter table gadgets drop column price;",
      );
      expect(text).toContain(
        "-- status: the check removes 'published'.\nalter table articles drop constraint articles_status_check;",
      );
      expect(text.match(/-- DESTRUCTIVE/g)).toHaveLength(3);
    } finally {
      rmSync(destructiveDir, { recursive: true, force: true });
    }
  });

  it('drops an index it derived that the definition no longer calls for (a unique field no longer unique), after which a duplicate is accepted', {
    timeout: 180_000,
  }, async () => {
    const dropDir = mkdtempSync(join(tmpdir(), 'tenantry-migration-drop-'));
    try {
      cpSync(TESTKIT_MIGRATIONS, dropDir, { recursive: true });
      // The widget's name no longer unique, and no longer a sort.
      const modules = changedTestkit(dropDir, {
        widget: entity({ ...widget, storage: { ...widget.storage, unique: [] }, sortable: ['size'] } as never),
      });
      const options = { modules, config: testConfig(), scratchUrl: adminUrl(), allowDestructive: false };
      const written = await newMigration('testkit', 'name not unique', options);
      expect(written.leftOut).toEqual([]);
      const text = readFileSync(join(dropDir, nextMigrationFile(TESTKIT_MIGRATIONS, 'name_not_unique')), 'utf8');
      expect(text).toContain(
        '-- widgets_name_unique was derived from the definition, which no longer calls for it.\ndrop index widgets_name_unique;',
      );
      expect(text).toContain('drop index widgets_by_name;');
      // Indexes it did not derive stay: a person's (the tasks' SLA sweep's, say) are never dropped.
      expect(text.match(/drop index/g)).toHaveLength(2);

      const pool = new pg.Pool({ connectionString: await createTestDatabase('dropped'), max: 2 });
      try {
        await runMigrations(pool, migrationSources(modules));
        await pool.query(`set app.tenant_id = '00000000-0000-0000-0000-000000000001'`);
        await pool.query(`insert into widgets (name, size, color) values ('Widget', 1, 'red'), ('Widget', 2, 'blue')`);
      } finally {
        await pool.end();
      }
      const again = await newMigration('testkit', 'again', options);
      expect(again.file).toBeUndefined();
    } finally {
      rmSync(dropDir, { recursive: true, force: true });
    }
  });

  it('refuses a required column with no default, naming the fix, unless --allow-destructive', {
    timeout: 180_000,
  }, async () => {
    const requiredDir = mkdtempSync(join(tmpdir(), 'tenantry-migration-required-'));
    try {
      cpSync(TESTKIT_MIGRATIONS, requiredDir, { recursive: true });
      const modules = changedTestkit(requiredDir, {
        widget: entity({ ...widget, fields: { ...widget.fields, sku: Type.String({ maxLength: 20 }) } } as never),
      });
      const options = { modules, config: testConfig(), scratchUrl: adminUrl() };
      const refused = await newMigration('testkit', 'sku', { ...options, allowDestructive: false });
      expect(refused.file).toBeUndefined();
      expect(refused.leftOut).toEqual([
        'testkit.widget: alter table widgets add column sku text not null; (sku is required with no default, so it fails while widgets has rows: give the field a WithDefault (or make it Optional), or write a backfill after it and run again with --allow-destructive)',
      ]);
      const allowed = await newMigration('testkit', 'sku', { ...options, allowDestructive: true });
      expect(allowed.file).toBeDefined();
      expect(readFileSync(join(requiredDir, nextMigrationFile(TESTKIT_MIGRATIONS, 'sku')), 'utf8')).toContain(
        '-- DESTRUCTIVE (--allow-destructive): sku is required with no default, so it fails while widgets has rows: give the field a WithDefault (or make it Optional), or write a backfill after it and run again with --allow-destructive.\nalter table widgets add column sku text not null;',
      );
    } finally {
      rmSync(requiredDir, { recursive: true, force: true });
    }
  });

  it('refuses an unknown module or a missing name with the usage', async () => {
    const err: string[] = [];
    const options = { modules: allModules, config: testConfig(), out: () => {}, err: (t: string) => err.push(t) };
    expect(await migrationNewCommand(['nosuchmodule', 'x'], options)).toBe(2);
    expect(await migrationNewCommand(['task'], options)).toBe(2);
    expect(err.join('')).toMatch(
      /no module nosuchmodule[\s\S]*usage: npm run migration:new[\s\S]*name the module and the migration/,
    );
  });
});

describe('npm run migration:new -- <module> --rewrite', () => {
  const adminUrl = () => inject('pgAdminUrl');
  // The widget with a weight, then with a weight and a sku: two edits of the definition before any start.
  const weight = { weight: WithDefault(Type.Integer({ minimum: 0, maximum: 1000 }), 0) };
  const sku = { sku: Type.Optional(Type.String({ maxLength: 20 })) };
  const withFields = (dir: string, fields: Record<string, unknown>) =>
    changedTestkit(dir, { widget: entity({ ...widget, fields: { ...widget.fields, ...fields } } as never) });

  it('regenerates the files the development database has not applied, and refuses in one line, changing nothing, once it has', {
    timeout: 240_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenantry-migration-rewrite-'));
    const historyUrl = await createTestDatabase('rewrite');
    const pool = new pg.Pool({ connectionString: historyUrl, max: 2 });
    try {
      cpSync(TESTKIT_MIGRATIONS, dir, { recursive: true });
      const shipped = readdirSync(dir).sort();
      // The development database has applied every file there is.
      await runMigrations(pool, migrationSources(withFields(dir, {})));
      const run = async (modules: ModuleDefinition[], argv: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const status = await migrationNewCommand(argv, {
          modules,
          config: testConfig(),
          scratchUrl: adminUrl(),
          historyUrl,
          out: (t) => out.push(t),
          err: (t) => err.push(t),
        });
        return { status, out: out.join(''), err: err.join('') };
      };

      // Nothing unapplied: refused in one line naming the newest applied file; nothing written.
      const nothing = await run(withFields(dir, weight), ['testkit', '--rewrite']);
      expect(nothing.status).toBe(1);
      expect(nothing.err).toBe(
        `migration:new: migration testkit/${shipped.at(-1)} is applied to the development database (the given database): nothing to rewrite; write the change as a new migration (npm run migration:new -- testkit <change>), or empty the development database first (npm run db:reset)\n`,
      );
      expect(readdirSync(dir).sort()).toEqual(shipped);

      // The next file, generated for the weight; then the definition changes again before any start.
      const first = await newMigration('testkit', 'widget weight', {
        allowDestructive: false,
        modules: withFields(dir, weight),
        config: testConfig(),
        scratchUrl: adminUrl(),
      });
      const next = nextMigrationFile(TESTKIT_MIGRATIONS, 'widget_weight');
      expect(first.file).toContain(next);
      expect(readFileSync(join(dir, next), 'utf8')).not.toContain('sku');

      const rewritten = await run(withFields(dir, { ...weight, ...sku }), ['testkit', '--rewrite']);
      expect(rewritten.status, rewritten.err).toBe(0);
      expect(rewritten.out).toMatch(new RegExp(`^removed .*${next} \\(not applied\\)\nwrote .*${next}: read it`));
      // One file under the same number and name, with both changes, as one generation from the applied files gives.
      expect(readdirSync(dir).sort()).toEqual([...shipped, next]);
      const text = readFileSync(join(dir, next), 'utf8');
      expect(text).toContain('alter table widgets add column weight integer not null default 0;');
      expect(text).toContain('alter table widgets add column sku text;');
      expect(text).toContain('--rewrite');

      // Applied (the development database started on it), it is refused like the others.
      await runMigrations(pool, migrationSources(withFields(dir, { ...weight, ...sku })));
      const applied = await run(withFields(dir, { ...weight, ...sku, note: Type.String({ maxLength: 500 }) }), [
        'testkit',
        'widgets again',
        '--rewrite',
      ]);
      expect(applied.status).toBe(1);
      expect(applied.err.split('\n')).toEqual([expect.stringContaining(`migration testkit/${next} is applied`), '']);
      expect(readFileSync(join(dir, next), 'utf8')).toBe(text);
    } finally {
      await pool.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts a file applied under another name (its SHA-256 recorded) as applied, and refuses an applied file after one that is not', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenantry-migration-renamed-'));
    const historyUrl = await createTestDatabase('renamed');
    const pool = new pg.Pool({ connectionString: historyUrl, max: 2 });
    try {
      cpSync(TESTKIT_MIGRATIONS, dir, { recursive: true });
      const files = readdirSync(dir).sort();
      await runMigrations(pool, migrationSources(changedTestkit(dir, {})));
      const options = { allowDestructive: false, config: testConfig(), scratchUrl: adminUrl(), historyUrl };
      // The newest file renamed: its content is applied, so it is not the rewrite's to replace.
      const last = files.at(-1)!;
      const renamed = last.replace(/_[^.]+\.sql$/, '_renamed.sql');
      cpSync(join(dir, last), join(dir, renamed));
      rmSync(join(dir, last));
      await expect(
        rewriteMigrations('testkit', undefined, { ...options, modules: changedTestkit(dir, {}) }),
      ).rejects.toThrow(`migration testkit/${renamed} is applied to the development database`);
      // An earlier file unapplied (forgotten in the history) before applied ones: the applied one after it is named.
      await pool.query(`delete from migration_history where owner = 'testkit' and name = $1`, [files[1]]);
      await expect(
        rewriteMigrations('testkit', undefined, { ...options, modules: changedTestkit(dir, {}) }),
      ).rejects.toThrow(
        `migration testkit/${files[2]} is applied to the development database (the given database), after ${files[1]} which is not`,
      );
      expect(existsSync(join(dir, files[1]!))).toBe(true);
    } finally {
      await pool.end();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a module with no migrations, and a rewrite without a module', async () => {
    const err: string[] = [];
    const options = { modules: allModules, config: testConfig(), out: () => {}, err: (t: string) => err.push(t) };
    expect(await migrationNewCommand(['--rewrite'], options)).toBe(2);
    expect(err.join('')).toMatch(/name the module to rewrite[\s\S]*--rewrite/);
    const empty = mkdtempSync(join(tmpdir(), 'tenantry-migration-none-'));
    try {
      await expect(
        rewriteMigrations('testkit', undefined, {
          allowDestructive: false,
          modules: [...allModules, { ...testkitModule, migrations: empty }],
          config: testConfig(),
          historyUrl: null,
        }),
      ).rejects.toThrow(
        'testkit has no migration to rewrite: npm run migration:new -- testkit <name> writes its first',
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
