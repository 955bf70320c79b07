import { describe, expect, it } from 'vitest';
import { startTestApp } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * Issue 47: the names a plan stores are checked at boot against the declared features and limits.
 * The API refuses an unknown one (422); a plan seeded straight into the database, or kept from
 * before a module stopped declaring a name, would grant or bound nothing without a word: the
 * service refuses to start, one line per unknown name, naming the plan and the fix.
 */
const t = useTestApp();

describe('a stored plan naming a feature or limit no module declares', () => {
  it('stops the boot with one line per unknown name; once the plan is fixed, the service starts', async () => {
    const pool = t.app.services.db.pool;
    await pool.query(
      `insert into plans (code, name, price, currency, interval, features, limits, active)
       values ('seeded', 'Seeded', 0, 'EUR', 'month', $1, $2, true)`,
      [['webhook.endpoints', 'api.access'], JSON.stringify({ 'user.seats': 3, 'user.chairs': 2 })],
    );
    let message = '';
    await startTestApp({ databaseUrl: t.app.databaseUrl }).then(
      (app) => app.close(),
      (err: Error) => {
        expect(err.name).toBe('BootCheckError');
        message = err.message;
      },
    );
    expect(message.split('\n').filter((line) => line.startsWith('- '))).toEqual([
      "- plan seeded (module billing) grants feature api.access, which no module declares: take it out of the plan seeded's features, or declare it in a module's features",
      "- plan seeded (module billing) sets limit user.chairs, which no module declares: take it out of the plan seeded's limits, or declare it in a module's limits",
    ]);

    await pool.query(`update plans set features = $1, limits = $2 where code = 'seeded'`, [
      ['webhook.endpoints'],
      JSON.stringify({ 'user.seats': 3 }),
    ]);
    const started = await startTestApp({ databaseUrl: t.app.databaseUrl });
    await started.close();
  });
});
