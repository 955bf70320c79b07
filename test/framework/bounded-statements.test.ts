import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { EntityOperations } from '../../framework/operations/entity-ops.ts';
import { StatementShapes, WRITE_SHAPES_PER_KIND } from '../../framework/operations/statement-shapes.ts';
import { statementName } from '../../framework/db/statements.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

/**
 * The insert and update texts vary with the fields a write names: up to 2ⁿ texts for n fields.
 * A connection holds a bounded number of them as prepared statements; the rest run unnamed.
 */
describe('StatementShapes', () => {
  it('prepares the first texts up to its limit and leaves every later one unnamed, for good', () => {
    const shapes = new StatementShapes(2);
    const texts = [1, 2, 3, 4].map((i) => `select ${i} as shape_${randomUUID().slice(0, 8)}`);
    for (const text of texts) expect(shapes.text(text)).toBe(text);
    expect(shapes.size).toBe(2);
    expect(texts.map((t) => statementName(t) !== undefined)).toEqual([true, true, false, false]);
    // A kept text stays prepared; a text past the limit is never prepared later.
    shapes.text(texts[0]!);
    shapes.text(texts[3]!);
    expect(statementName(texts[3]!)).toBeUndefined();
  });

  it('is a small bound per entity and kind of write', () => {
    expect(WRITE_SHAPES_PER_KIND).toBeGreaterThan(0);
    expect(WRITE_SHAPES_PER_KIND).toBeLessThanOrEqual(16);
  });
});

describe('the generic writes on one connection', () => {
  let app: TestApp;
  let acme: TenantRef;
  beforeAll(async () => {
    app = await startTestApp({ config: testConfig({ database: { pool_size: 1 } }) });
    acme = await createCustomer(app, 'shapes');
  });
  afterAll(async () => {
    await app?.close();
  });

  it('prepare at most the bound of update and insert texts, however many shapes the writes take, and every write still lands', async () => {
    const entity = app.services.registry.entities.find((e) => e.names.key === 'testkit.widget')!;
    const ops = new EntityOperations(entity, { config: app.services.config, writeShapes: 2 });
    const tag = randomUUID().slice(0, 8);
    // Inserts of three shapes (with and without the optional note).
    const rows = await app.services.transactions.run(acme, async (ctx) => [
      await ops.create(ctx, { name: `${tag}-a`, size: 1, color: 'red' }),
      await ops.create(ctx, { name: `${tag}-b`, size: 1, color: 'red', note: 'n' }),
      await ops.create(ctx, { name: `${tag}-c`, size: 1, color: 'red', note: 'n', approved: true }),
    ]);
    // Updates of every non-empty subset of the three editable fields: seven texts.
    const subsets = [
      ['name'],
      ['size'],
      ['note'],
      ['name', 'size'],
      ['name', 'note'],
      ['size', 'note'],
      ['name', 'size', 'note'],
    ];
    for (const [i, fields] of subsets.entries()) {
      const changes = Object.fromEntries(fields.map((f) => [f, f === 'size' ? 100 + i : `${tag}-${f}-${i}`]));
      await app.services.transactions.run(acme, (ctx) => ops.update(ctx, rows[0]!.id as string, changes));
    }
    const final = await app.services.transactions.run(acme, (ctx) => ops.read(ctx, rows[0]!.id as string));
    expect(final).toMatchObject({ name: `${tag}-name-6`, size: 106, note: `${tag}-note-6` });
    const prepared = async (prefix: string) =>
      (
        await app.services.transactions.run(acme, (ctx) =>
          sql<{
            n: number;
          }>`select count(*)::int as n from pg_prepared_statements where statement like ${`${prefix}%`}`.execute(
            ctx.db,
          ),
        )
      ).rows[0]!.n;
    expect(await prepared('update "widgets" set')).toBeLessThanOrEqual(2);
    expect(await prepared('insert into "widgets"')).toBeLessThanOrEqual(2);
  });
});
