import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import { createCustomer, startTestApp, type TestApp } from '../helpers/app.ts';
import { testConfig } from '../helpers/config.ts';
import { tallyControl, testkitModule } from '../helpers/testkit-module.ts';
import { addUser } from '../modules/auth/fixtures.ts';
import { allModules } from '../../modules/index.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { DAY_MS } from '../../framework/clock.ts';
import { jobCommand } from '../../scripts/job.ts';
import { npmRun, type Finished } from './processes.ts';

let app: TestApp;
let acme: TenantRef;
let settings: Record<string, string>;
beforeAll(async () => {
  app = await startTestApp();
  acme = await createCustomer(app, 'jobcmd-acme');
  await createCustomer(app, 'jobcmd-globex');
  settings = { TENANTRY_DATABASE_URL: app.databaseUrl, TENANTRY_SERVER_PUBLIC_HOST: 'operator.localhost' };
});
afterAll(async () => {
  await app?.close();
});
beforeEach(() => {
  tallyControl.failFor.clear();
  tallyControl.attempts.length = 0;
});

/** Runs the documented command `npm run job -- <args>` from the repository root. */
const npmRunJob = (args: string[], timeoutMs = 60_000): Promise<Finished> => npmRun('job', args, settings, timeoutMs);

/** The command's main function, in this process, with the test kit's job declared too. */
async function runInProcess(args: string[]): Promise<Finished> {
  let stdout = '';
  let stderr = '';
  const code = await jobCommand(args, {
    modules: [...allModules, testkitModule],
    config: testConfig({ database: { url: app.databaseUrl } }),
    out: (t) => void (stdout += t),
    err: (t) => void (stderr += t),
  });
  return { code, stdout, stderr };
}

const sessionsOf = async (userId: string) =>
  (
    await app.services.db.pool.query<{ days: number }>(
      `select round(extract(epoch from expires_at - now()) / 86400)::int as days from sessions where user_id = $1 order by 1`,
      [userId],
    )
  ).rows.map((r) => r.days);

describe('npm run job -- <name> [--at <ISO time>] [--tenant <slug>]', () => {
  it('runs a declared job once now, printing what it did', async () => {
    const run = await npmRunJob(['auth-sweep']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^auth-sweep at \d{4}-\d\d-\d\dT[\d:.]+Z\n {2}\(no tenant\): ok \{"attemptsPurged":\d+,"swept":\{.*\}\}\n$/,
    );
  });

  it('runs it as if the clock read --at: the sweep deletes what has expired by then, and says so', async () => {
    const user = await addUser(app, acme);
    await app.services.transactions.run(acme, (ctx) =>
      ctx.db.executeQuery(
        CompiledQuery.raw(
          `insert into sessions (id_hash, user_id, expires_at) values (sha256('in two days'), $1, now() + interval '2 days'), (sha256('in ten days'), $1, now() + interval '10 days')`,
          [user.id],
        ),
      ),
    );
    const now = await npmRunJob(['auth-sweep']);
    expect(now.code, now.stderr).toBe(0);
    expect(await sessionsOf(user.id)).toEqual([2, 10]);

    const at = new Date(Date.now() + 3 * DAY_MS).toISOString();
    const later = await npmRunJob(['auth-sweep', '--at', at]);
    expect(later.code, later.stderr).toBe(0);
    expect(later.stdout).toContain(`auth-sweep at ${at.slice(0, 16)}`);
    expect(later.stdout).toContain('"swept":{"jobcmd-acme":{"sessions":1,"tokens":0,"accessTokens":0}}');
    expect(await sessionsOf(user.id)).toEqual([10]);
  });

  it('refuses an unknown job with status 2, naming the declared ones', async () => {
    const run = await npmRunJob(['no-such-job']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no job no-such-job; declared: auth-sweep');
    expect(run.stderr).toContain('usage: npm run job -- <name>');
  });

  it('runs a per-tenant job in every served tenant and prints one line per tenant', async () => {
    const run = await runInProcess(['testkit-tally', '--at', '2030-03-01T03:00:00Z']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^testkit-tally \(per tenant\) at 2030-03-01T03:00:0\d\.\d{3}Z \(--at\)$/);
    expect(lines.slice(1, -1).sort()).toEqual(
      [app.operator.slug, 'jobcmd-acme', 'jobcmd-globex']
        .sort()
        .map((slug) =>
          expect.stringMatching(new RegExp(`^ {2}${slug}: ok \\{"widgetsBefore":\\d+,"created":true\\}$`)),
        ),
    );
    expect(lines.at(-1)).toBe('3 tenants: 3 ok, 0 failed');
    // The run's slot is the minute the clock read.
    expect(new Set(tallyControl.attempts.map((a) => a.slot))).toEqual(new Set(['2030-03-01T03:00:00.000Z']));
  });

  it('runs it for the one tenant --tenant names', async () => {
    const run = await runInProcess(['testkit-tally', '--tenant', 'jobcmd-acme', '--at', '2030-03-02T03:00:00Z']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').slice(1)).toEqual([
      '  jobcmd-acme: ok {"widgetsBefore":1,"created":true}',
      '1 tenant: 1 ok, 0 failed',
    ]);
    expect(tallyControl.attempts.map((a) => a.tenantId)).toEqual([acme.id]);
  });

  it('reports a failing tenant and exits 1, after running the others', async () => {
    tallyControl.failFor.add(acme.id);
    const run = await runInProcess(['testkit-tally', '--at', '2030-03-03T03:00:00Z']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('  jobcmd-acme: failed: testkit-tally refuses tenant jobcmd-acme\n');
    expect(run.stdout).toContain('  jobcmd-globex: ok');
    expect(run.stdout).toContain('3 tenants: 2 ok, 1 failed');
  });

  it('refuses an unknown or suspended tenant, a tenant for a job that is not per tenant and a bad time, with status 2', async () => {
    const suspended = await createCustomer(app, 'jobcmd-suspended');
    await app.services.db.pool.query(`update tenants set status = 'suspended' where id = $1`, [suspended.id]);
    const cases: [string[], RegExp][] = [
      [['testkit-tally', '--tenant', 'nobody'], /no tenant nobody/],
      [['testkit-tally', '--tenant', 'jobcmd-suspended'], /tenant jobcmd-suspended is suspended/],
      [['auth-sweep', '--tenant', 'jobcmd-acme'], /job auth-sweep is not per tenant/],
      [['auth-sweep', '--at', 'tomorrow'], /--at must be an ISO time/],
      [['auth-sweep', '--at', '2030-01-01T02:00:00'], /--at must be an ISO time with its zone/],
      [[], /name one job/],
    ];
    for (const [args, message] of cases) {
      const run = await runInProcess(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toMatch(message);
    }
    expect(tallyControl.attempts).toEqual([]);
  });

  it('a database it cannot connect to: status 1 and one line naming the setting, no stack, no password', async () => {
    let stderr = '';
    const code = await jobCommand(['auth-sweep'], {
      modules: allModules,
      config: testConfig({ database: { url: 'postgres://nobody:secret-pw@127.0.0.1:1/none' } }),
      out: () => {},
      err: (t) => void (stderr += t),
    });
    expect(code).toBe(1);
    expect(stderr).toBe('job: cannot connect to the database (database.url): connect ECONNREFUSED 127.0.0.1:1\n');
  });
});
