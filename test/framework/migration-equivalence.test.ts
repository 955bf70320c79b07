import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { snapshotLinesMissing, snapshotTables } from '../helpers/catalog-snapshot.ts';
import { migrationSources } from '../../framework/app.ts';
import { runMigrations } from '../../framework/db/migrate.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { generateMigration } from '../../framework/schema/generate.ts';

/**
 * Equivalence: for every entity of modules/ and the test kit, the table the generated create
 * migration makes on an empty database (the framework's migrations only) is the table the
 * hand-written migrations make: the same columns with their types, nullability and defaults, the
 * same constraints, indexes, row-level security, policies and triggers, compared through the
 * catalog of both databases.
 *
 * What a definition cannot say stays hand-written, in a migration of its own beside the generated
 * one, and is listed here, each with why: business rules a field schema does not carry into SQL
 * (length and pattern checks, which the API validates before any write), indexes serving one
 * module's own question, a constraint another table's foreign key needs, and the policy letting a
 * cross-tenant function read the table. The test fails on anything else either side has alone, so
 * the list stays exact. List indexes compare by their keys and predicate, not their names (the
 * hand-written ones were named before the generator existed: memos_by_owner, contents_by_published).
 */
const HAND_WRITTEN_ONLY: Readonly<Record<string, readonly string[]>> = {
  users: [
    // Checks the API makes too (minLength/maxLength); kept in the table as well.
    'constraints: users_display_name_check: CHECK ((length(display_name) <= 200))',
    'constraints: users_email_check: CHECK (((length(email) >= 3) AND (length(email) <= 320)))',
    // users is the framework's identity table: the generator adds the user module's status values to
    // a table that exists as a new check, which it writes only with --allow-destructive (a row
    // holding another value would make it fail); the module's migration added it by hand.
    "constraints: users_status_check: CHECK ((status = ANY (ARRAY['invited'::text, 'active'::text, 'deactivated'::text])))",
  ],
  contents: [
    'constraints: contents_body_check: CHECK ((char_length(body) <= 200000))',
    "constraints: contents_slug_check: CHECK (((slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'::text) AND (char_length(slug) <= 100)))",
    'constraints: contents_title_check: CHECK (((char_length(title) >= 1) AND (char_length(title) <= 200)))',
    // A rule across two fields: no schema of one field states it.
    "constraints: contents_published_at_matches_status: CHECK ((((status = 'published'::text) AND (published_at IS NOT NULL)) OR ((status = 'draft'::text) AND (published_at IS NULL)) OR (status = 'archived'::text)))",
  ],
  tasks: [
    // The SLA sweep's question (modules/task/sla-sweep.ts).
    "indexes: CREATE INDEX ON public.tasks USING btree (tenant_id, deadline) WHERE ((deleted_at IS NULL) AND (NOT sla_breached) AND (status <> ALL (ARRAY['resolved'::text, 'closed'::text])))",
  ],
  plans: ['constraints: plans_price_check: CHECK ((price >= 0))'],
  subscriptions: [
    'constraints: subscriptions_anchor_day_check: CHECK (((anchor_day >= 1) AND (anchor_day <= 31)))',
    // The renewal job's question (modules/billing/renewal.ts).
    'indexes: CREATE INDEX ON public.subscriptions USING btree (tenant_id, period_end) WHERE ((deleted_at IS NULL) AND (ended_at IS NULL))',
    // billing_plan_in_use() reads every tenant's subscriptions (allow_cross_tenant_read).
    'policies: cross_tenant_read r to tenantry_cross_tenant using true check -',
  ],
  // testkit_gadget_in_use() reads every tenant's settings.
  settings: ['policies: cross_tenant_read r to tenantry_cross_tenant using true check -'],
  // The outbox relay asks which tenants have a live endpoint (webhook-fan-out's onlyTenantsWith).
  webhook_endpoints: ['policies: cross_tenant_read r to tenantry_cross_tenant using true check -'],
};

const MODULES = [...allModules, testkitModule];
const ENTITIES = MODULES.flatMap((m) => m.entities ?? []);
const TABLES = ENTITIES.map((e) => resolveEntity(e).names.table);

let handWritten: pg.Pool;
let generated: pg.Pool;
let sql: string;

beforeAll(async () => {
  [handWritten, generated] = await Promise.all([createTestDatabase('hand'), createTestDatabase('gen')]).then((urls) =>
    urls.map((url) => new pg.Pool({ connectionString: url, max: 2 })),
  );
  await runMigrations(handWritten, migrationSources(MODULES));
  await runMigrations(generated, migrationSources([]));
  const result = await generateMigration(generated, ENTITIES, { allowDestructive: false, command: 'equivalence test' });
  // users is the framework's identity table (framework/0013_identity.sql): the user entity's migration adds its columns.
  expect(result.changes.filter((c) => c.kind !== 'create-table' && c.table !== 'users')).toEqual([]);
  sql = result.sql!;
  await generated.query(sql);
});
afterAll(async () => {
  await handWritten?.end();
  await generated?.end();
});

describe('the generated create migration and the hand-written migrations make the same tables', () => {
  it('covers every entity of modules/ and the test kit', () => {
    expect(TABLES).toEqual(
      expect.arrayContaining([
        'users',
        'tasks',
        'plans',
        'subscriptions',
        'contents',
        'widgets',
        'gadgets',
        'settings',
        'memos',
        'articles',
      ]),
    );
    for (const table of TABLES.filter((t) => t !== 'users')) expect(sql).toContain(`create table ${table} (`);
    expect(sql).toContain('alter table users add column email');
  });

  it.each(TABLES)('%s: the same columns, constraints, indexes, security, policies and triggers', async (table) => {
    const [hand, gen] = await Promise.all([snapshotTables(handWritten, [table]), snapshotTables(generated, [table])]);
    const handTable = hand.get(table)!;
    const genTable = gen.get(table)!;
    expect(handTable.columns.length, `${table} exists in the hand-written database`).toBeGreaterThan(0);
    expect(snapshotLinesMissing(genTable, handTable), 'made by the generated migration alone').toEqual([]);
    expect(snapshotLinesMissing(handTable, genTable).sort(), 'made by the hand-written migrations alone').toEqual(
      [...(HAND_WRITTEN_ONLY[table] ?? [])].sort(),
    );
  });

  it('writes nothing more once the hand-written migrations ran: they agree with the definitions', {
    timeout: 120_000,
  }, async () => {
    for (const module of MODULES) {
      const again = await generateMigration(handWritten, module.entities ?? [], {
        allowDestructive: true,
        command: 'equivalence test',
        installed: ENTITIES,
      });
      expect(again.sql, `module ${module.name}`).toBeUndefined();
    }
  });
});
