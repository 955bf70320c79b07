import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import type { TenantRef } from '../../../framework/context/tenant.ts';
import { authSweep, sweepTenant } from '../../../modules/auth/sweep.ts';
import { addUser } from './fixtures.ts';

const logLines: string[] = [];
let app: TestApp;
let acme: TenantRef;
let globex: TenantRef;
beforeAll(async () => {
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void logLines.push(line) },
  ) as unknown as FastifyBaseLogger;
  app = await startTestApp({ role: 'all', logger });
  acme = await createCustomer(app, 'acme');
  globex = await createCustomer(app, 'globex');
});
afterAll(async () => {
  await app?.close();
});

const pool = () => app.services.db.pool;
const count = async (sql: string, params: unknown[] = []) =>
  (await pool().query<{ n: number }>(sql, params)).rows[0]!.n;

async function insertSessions(tenant: TenantRef, userId: string, n: number, expired: boolean): Promise<void> {
  await pool().query(
    `insert into sessions (tenant_id, id_hash, user_id, expires_at)
     select $1, sha256(convert_to(gen_random_uuid()::text, 'utf8')), $2, now() + case when $4 then interval '-1 minute' else interval '1 day' end
       from generate_series(1, $3)`,
    [tenant.id, userId, n, expired],
  );
}

describe('auth-sweep', () => {
  it('is scheduled hourly, on the hour', () => {
    const job = app.services.jobs.find((j) => j.name === 'auth-sweep');
    expect(job?.cron).toBe('0 * * * *');
  });

  it('deletes expired sessions a thousand rows per transaction, leaving live ones', async () => {
    const user = await addUser(app, acme);
    await insertSessions(acme, user.id, 2500, true);
    await insertSessions(acme, user.id, 3, false);
    const result = await sweepTenant(app.services, acme);
    expect(result.sessionBatches).toEqual([1000, 1000, 500]);
    expect(await count('select count(*)::int as n from sessions where user_id = $1', [user.id])).toBe(3);
  });

  it('deletes spent and expired set-password tokens, keeping pending ones', async () => {
    const spent = await addUser(app, acme);
    const expired = await addUser(app, acme);
    const pending = await addUser(app, acme);
    await pool().query(
      `insert into set_password_tokens (tenant_id, user_id, token_hash, expires_at, used_at) values
         ($1, $2, sha256('a'), now() + interval '1 day', now()),
         ($1, $3, sha256('b'), now() - interval '1 second', null),
         ($1, $4, sha256('c'), now() + interval '1 day', null)`,
      [acme.id, spent.id, expired.id, pending.id],
    );
    const result = await sweepTenant(app.services, acme);
    expect(result.tokenBatches).toEqual([2]);
    expect(
      (await pool().query('select user_id from set_password_tokens where tenant_id = $1', [acme.id])).rows,
    ).toEqual([{ user_id: pending.id }]);
  });

  it('deletes expired personal access tokens, keeping live ones', async () => {
    const user = await addUser(app, acme);
    await pool().query(
      `insert into access_tokens (tenant_id, user_id, name, token_hash, expires_at) values
         ($1, $2, 'old', sha256('pat-old'), now() - interval '1 second'),
         ($1, $2, 'live', sha256('pat-live'), now() + interval '1 day')`,
      [acme.id, user.id],
    );
    const result = await sweepTenant(app.services, acme);
    expect(result.accessTokenBatches).toEqual([1]);
    expect((await pool().query('select name from access_tokens where user_id = $1', [user.id])).rows).toEqual([
      { name: 'live' },
    ]);
  });

  it('logs every role naming an undefined permission', async () => {
    await pool().query(
      `insert into roles (tenant_id, name, permissions) values ($1, 'legacy', '{user:read,billing:refund}')`,
      [globex.id],
    );
    const result = await sweepTenant(app.services, globex);
    expect(result.undefinedPermissions).toEqual([{ role: 'legacy', permissions: ['billing:refund'] }]);
    const entry = logLines.map((l) => JSON.parse(l)).find((l) => l.role === 'legacy');
    expect(entry).toMatchObject({ tenant: 'globex', role: 'legacy', permissions: ['billing:refund'], level: 40 });
  });

  it('as a job: purges rate-limit windows, then sweeps every tenant', async () => {
    const user = await addUser(app, globex);
    await insertSessions(globex, user.id, 5, true);
    await pool().query(
      `insert into auth_attempts (tenant_id, kind, source, at) values
         ($1, 'login', '192.0.2.1', now() - interval '2 hours'),
         ($1, 'forgot', '192.0.2.1', now() - interval '61 minutes'),
         ($1, 'reset', '192.0.2.1', now() - interval '1 minute'),
         ($2, 'login', '192.0.2.1', now() - interval '3 hours')`,
      [acme.id, globex.id],
    );
    const [outcome] = await app.worker!.jobs.runOnce('auth-sweep');
    expect(outcome).toEqual({
      tenant: null,
      ok: true,
      summary: { attemptsPurged: 3, swept: { globex: { sessions: 5, tokens: 0, accessTokens: 0 } } },
    });
    expect((await pool().query('select kind from auth_attempts')).rows).toEqual([{ kind: 'reset' }]);
    expect(await count(`select count(*)::int as n from sessions where expires_at <= now()`)).toBe(0);
    expect(authSweep.perTenant).toBe(false);
  });
});
