import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signInAs, type SignedIn } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';

/**
 * A route's strategy is chosen when it is registered (framework/http/request-strategies.ts); a
 * one-exchange route then decides per request only what varies from one request to the next: a
 * bearer token, an Idempotency-Key, a search (`q`) and an id that is no UUID each send the request
 * through one transaction, and every other request is one exchange.
 */
const t = useTestApp({ customers: ['strategies'] });
const HOST = 'strategies.localhost';
const WIDGETS = '/api/v1/testkit/widgets';

/** How many transactions (run) and one-exchange requests (runStatement) fn caused. */
async function served(fn: () => Promise<{ status: number }>, status: number) {
  const transactions = t.app.services.transactions;
  const run = transactions.run.bind(transactions);
  const runStatement = transactions.runStatement.bind(transactions);
  const counts = { transactions: 0, exchanges: 0 };
  transactions.run = ((...args: Parameters<typeof run>) => {
    counts.transactions++;
    return run(...args);
  }) as typeof transactions.run;
  transactions.runStatement = ((...args: Parameters<typeof runStatement>) => {
    counts.exchanges++;
    return runStatement(...args);
  }) as typeof transactions.runStatement;
  try {
    const res = await fn();
    expect(res.status, JSON.stringify(res)).toBe(status);
  } finally {
    transactions.run = run;
    transactions.runStatement = runStatement;
  }
  return counts;
}

const ONE_EXCHANGE = { transactions: 0, exchanges: 1 };
const ONE_TRANSACTION = { transactions: 1, exchanges: 0 };

describe('a one-exchange route, per request', () => {
  let caller: SignedIn;
  let token: string;
  let id: string;
  const http = () => t.app.http(HOST);

  it('serves a plain list, read and create in one exchange', async () => {
    caller = await signInAs(t.app, t.strategies, ['widget:read', 'widget:write']);
    const made = await http()
      .post('/api/v1/auth/tokens')
      .set('Cookie', caller.cookie)
      .send({ name: 'strategies', permissions: ['widget:read', 'widget:write'] });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    token = made.body.token;
    let created: { status: number; body: { id: string } } | undefined;
    expect(
      await served(async () => {
        created = await http().post(WIDGETS).set('Cookie', caller.cookie).send({ name: 'one', size: 1, color: 'red' });
        return created;
      }, 201),
    ).toEqual(ONE_EXCHANGE);
    id = created!.body.id;
    expect(await served(() => http().get(WIDGETS).set('Cookie', caller.cookie), 200)).toEqual(ONE_EXCHANGE);
    expect(await served(() => http().get(`${WIDGETS}/${id}`).set('Cookie', caller.cookie), 200)).toEqual(ONE_EXCHANGE);
  });

  it('serves a request with a bearer token in one transaction', async () => {
    const bearer = `Bearer ${token}`;
    expect(await served(() => http().get(WIDGETS).set('Authorization', bearer), 200)).toEqual(ONE_TRANSACTION);
    expect(await served(() => http().get(`${WIDGETS}/${id}`).set('Authorization', bearer), 200)).toEqual(
      ONE_TRANSACTION,
    );
    expect(
      await served(
        () => http().post(WIDGETS).set('Authorization', bearer).send({ name: 'by-token', size: 1, color: 'red' }),
        201,
      ),
    ).toEqual(ONE_TRANSACTION);
  });

  it('serves a create with an Idempotency-Key in one transaction, which claims the key', async () => {
    const send = () =>
      http()
        .post(WIDGETS)
        .set('Cookie', caller.cookie)
        .set('Idempotency-Key', `strategies-${randomUUID()}`)
        .send({ name: 'keyed', size: 1, color: 'red' });
    expect(await served(send, 201)).toEqual(ONE_TRANSACTION);
  });

  it('serves a search (q) and an id that is no UUID in one transaction, the latter 404 after the guard', async () => {
    expect(await served(() => http().get(`${WIDGETS}?q=on`).set('Cookie', caller.cookie), 200)).toEqual(
      ONE_TRANSACTION,
    );
    expect(await served(() => http().get(`${WIDGETS}/not-a-uuid`).set('Cookie', caller.cookie), 404)).toEqual(
      ONE_TRANSACTION,
    );
    // Without the permission the guard answers first: the id's form tells such a caller nothing.
    const stranger = await signInAs(t.app, t.strategies, []);
    expect(await served(() => http().get(`${WIDGETS}/not-a-uuid`).set('Cookie', stranger.cookie), 403)).toEqual(
      ONE_TRANSACTION,
    );
  });

  it('serves every request of a route its entity rules out in one transaction (row access: memos)', async () => {
    expect(await served(() => http().get('/api/v1/testkit/memos').set('Cookie', caller.cookie), 200)).toEqual(
      ONE_TRANSACTION,
    );
  });
});
