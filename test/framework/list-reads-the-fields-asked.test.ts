import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { testConfig } from '../helpers/config.ts';
import { defineEntity, entity } from '../../framework/entity/define.ts';
import { resolveEntity } from '../../framework/entity/resolve.ts';
import { DateTime } from '../../framework/entity/date-time.ts';
import { EntityOperations } from '../../framework/http/entity-routes.ts';
import { CursorSeal } from '../../framework/operations/cursor.ts';
import { QUERY_SHAPES_PER_LIST, type PageQuery } from '../../framework/operations/paging.ts';
import { statementName } from '../../framework/db/statements.ts';

/**
 * Rule: a one-statement list whose fields= keeps only some of the row's own fields reads only
 * their columns (and the id), so the others are neither sent nor parsed; each such select list is
 * its own statement text, and a list keeps at most QUERY_SHAPES_PER_LIST varying texts prepared.
 */
const resolved = resolveEntity(
  entity(
    defineEntity({
      module: 'projectionprobe',
      name: 'thing',
      fields: {
        name: Type.String({ minLength: 1 }),
        note: Type.Optional(Type.String()),
        due: DateTime(),
        status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
        size: Type.Optional(Type.Integer()),
      },
      permissions: { read: 'widget:read', write: 'widget:write' },
    } as never),
  ),
);
const ops = new EntityOperations(resolved, { config: testConfig() });
const place = { tenantId: '00000000-0000-4000-8000-000000000001', cursors: new CursorSeal(Buffer.alloc(32, 7)) };
const page: PageQuery = { limit: 20, offset: 0, sort: 'createdAt' } as PageQuery;

function statementText(query: Record<string, unknown>): string {
  const exchange = ops.listExchange(page, place, ops.parse(query, new Date()));
  expect(exchange).toBeDefined();
  return exchange!.statement.text;
}

const selectList = (text: string) => /^select (.*?), "created_at"::text as "__sort"/s.exec(text)?.[1];

describe('a list reads the fields fields= asks for', () => {
  it('selects the id and the named columns only', () => {
    expect(selectList(statementText({ fields: 'name,due' }))).toBe('"id", "name", "due"');
    expect(selectList(statementText({ fields: 'createdAt', status: 'eq.open' }))).toBe('"id", "created_at"');
  });

  it('selects the whole row without fields=', () => {
    expect(selectList(statementText({ status: 'eq.open' }))).toBe(ops.selectList);
  });

  it('gives two different selections two different statements', () => {
    expect(statementText({ fields: 'name' })).not.toBe(statementText({ fields: 'note' }));
  });

  it(`keeps at most ${QUERY_SHAPES_PER_LIST} selections prepared; past it each runs unnamed`, () => {
    const names = ['name', 'note', 'due', 'status', 'size', 'createdAt', 'updatedAt'];
    const subsets = Array.from({ length: 2 ** names.length - 1 }, (_, mask) =>
      names.filter((_, i) => ((mask + 1) >> i) & 1).join(','),
    );
    const texts = new Set(subsets.map((fields) => statementText({ fields, size: 'gt.1' })));
    expect(texts.size).toBe(subsets.length);
    const kept = [...texts].filter((text) => statementName(text) !== undefined);
    expect(kept.length).toBeLessThanOrEqual(QUERY_SHAPES_PER_LIST);
    expect(kept.length).toBeGreaterThan(0);
  });
});
