import { describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../helpers/use-test-app.ts';
import { testConfig } from '../helpers/config.ts';
import { JobRunner } from '../../framework/events/jobs.ts';
import { RETENTION_BATCH, firstIdAt } from '../../framework/history/retention.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';

// history.retention_days, applied by the daily framework job history-retention, per tenant, in batches.
const t = useTestApp({
  customers: ['keep', 'other', 'spread'],
  config: testConfig({ history: { retention_days: 30 } }),
});
const DAY = 24 * 60 * 60_000;

/**
 * A UUIDv7 of the given millisecond, as the framework makes them. Made here rather than by
 * uuidv7(), which never goes back in time within a process (ids stay ordered): old ids are
 * seeded after the process has made current ones.
 */
function idAt(ms: number): string {
  const hex = ms.toString(16).padStart(12, '0');
  const tail = randomUUID().replaceAll('-', '');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7${tail.slice(0, 3)}-8${tail.slice(4, 7)}-${tail.slice(8, 20)}`;
}

/** Revisions of one made-up record, made `daysAgo` days ago (their ids carry that time, as the framework's do). */
async function seed(tenant: TenantRef, count: number, daysAgo: number): Promise<void> {
  const at = new Date(Date.now() - daysAgo * DAY);
  const ids = Array.from({ length: count }, () => idAt(at.getTime()));
  await t.app.services.transactions.run(tenant, (ctx) =>
    ctx.db.executeQuery(
      CompiledQuery.raw(
        `insert into revisions (id, entity, row_id, at, actor_kind, operation, new_values)
         select id, 'testkit.widget', $2, $3, 'system', 'update', '{"size": 1}' from unnest($1::uuid[]) as id`,
        [ids, idAt(at.getTime()), at],
      ),
    ),
  );
}

const count = async (tenant: TenantRef) =>
  t.app.services.transactions.run(tenant, async (ctx) => {
    const { rows } = await ctx.db.executeQuery<{ old: number; recent: number }>(
      CompiledQuery.raw(
        `select count(*) filter (where at < $1)::int as old, count(*) filter (where at >= $1)::int as recent from revisions`,
        [new Date(Date.now() - 30 * DAY)],
      ),
    );
    return rows[0]!;
  });

describe('history retention', () => {
  it('deletes the tenant’s revisions older than history.retention_days, a batch at a time, and keeps the rest', async () => {
    await seed(t.keep, RETENTION_BATCH * 2 + 17, 40);
    await seed(t.keep, 5, 10);
    await seed(t.other, 3, 40);
    const [outcome] = await new JobRunner(t.app.services).runOnce('history-retention', { tenant: t.keep });
    expect(outcome!.ok, outcome!.error).toBe(true);
    expect(outcome!.summary).toMatchObject({ deleted: RETENTION_BATCH * 2 + 17 });
    expect(await count(t.keep)).toEqual({ old: 0, recent: 5 });
    // Each tenant's run is its own: the other tenant's are there until its run.
    expect(await count(t.other)).toEqual({ old: 3, recent: 0 });
    await new JobRunner(t.app.services).runOnce('history-retention', { tenant: t.other });
    expect(await count(t.other)).toEqual({ old: 0, recent: 0 });
  });

  it('walks the key (tenant, row, id) once: old revisions spread over many records, among recent ones, all go', async () => {
    // 700 records, each with three revisions past the cut and one within it: 2,100 to delete, more
    // than two batches, interleaved in key order with the 700 to keep.
    const records = 700;
    const old = Date.now() - 40 * DAY;
    const recent = Date.now() - 10 * DAY;
    await t.app.services.transactions.run(t.spread, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into revisions (id, entity, row_id, at, actor_kind, operation, new_values)
           select r.id, 'testkit.widget', r.row_id, r.at, 'system', 'update', '{"size": 1}'
             from unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) as r(id, row_id, at)`,
          (() => {
            const ids: string[] = [];
            const rowIds: string[] = [];
            const ats: Date[] = [];
            for (let i = 0; i < records; i++) {
              const rowId = randomUUID();
              for (const ms of [old, old + 1, old + 2, recent]) {
                ids.push(idAt(ms));
                rowIds.push(rowId);
                ats.push(new Date(ms));
              }
            }
            return [ids, rowIds, ats];
          })(),
        ),
      ),
    );
    expect(await count(t.spread)).toEqual({ old: records * 3, recent: records });
    const [outcome] = await new JobRunner(t.app.services).runOnce('history-retention', { tenant: t.spread });
    expect(outcome!.ok, outcome!.error).toBe(true);
    expect(outcome!.summary).toMatchObject({ deleted: records * 3 });
    expect(await count(t.spread)).toEqual({ old: 0, recent: records });
  });

  it('is a daily framework job over every tenant', () => {
    const job = t.app.services.jobs.find((j) => j.name === 'history-retention');
    expect(job).toMatchObject({ module: 'framework', perTenant: true, cron: '41 3 * * *' });
  });

  it('finds what is due by the revisions’ key: every id below the cut was made before it', () => {
    const cut = new Date('2026-01-01T00:00:00.000Z');
    for (let i = 0; i < 100; i++) {
      expect(idAt(cut.getTime() - 1) < firstIdAt(cut)).toBe(true);
      expect(idAt(cut.getTime()) >= firstIdAt(cut)).toBe(true);
    }
  });
});
