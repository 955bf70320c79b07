import { describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';

// No worker runs: the endpoints below (a public host name) are never delivered to.
const t = useTestApp({ customers: ['keysecrets'] });
const host = 'keysecrets.localhost';
const ENDPOINTS = '/api/v1/webhook/endpoints';

let admin: SignedIn | undefined;
const signedIn = async () => (admin ??= await signInAs(t.app, t.keysecrets, ['webhook:manage']));

/** Every idempotency row of the tenant, every column, as PostgreSQL writes the row out as text. */
const idempotencyRows = () =>
  t.app.services.transactions.run(t.keysecrets, async (ctx) => {
    const { rows } = await sql<{ row: string }>`select k::text as row from idempotency_keys k`.execute(ctx.db);
    return rows.map((r) => r.row);
  });

/** Neither the secret nor its key material (the base64 after whsec_) is in any column of any row. */
const expectNowhere = async (secret: string) => {
  const rows = await idempotencyRows();
  expect(rows.length).toBeGreaterThan(0);
  for (const row of rows) {
    expect(row).not.toContain(secret);
    expect(row).not.toContain(secret.slice('whsec_'.length));
  }
};

const post = async (path: string, key: string, body: Record<string, unknown>) =>
  t.app
    .http(host)
    .post(path)
    .set('Cookie', (await signedIn()).cookie)
    .set('Idempotency-Key', key)
    .send(body);

describe('answers carrying a secret are kept for replay without it', () => {
  it('endpoint create: the key’s row holds no secret; a replay answers the same status and body with signingSecret null and says so', async () => {
    const body = { url: 'https://hooks.example.com/keyed', events: ['task.task.created'] };
    const first = await post(ENDPOINTS, 'create-once', body);
    expect(first.status).toBe(201);
    const secret = first.body.signingSecret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(first.headers['idempotent-secrets-withheld']).toBeUndefined();
    await expectNowhere(secret);

    const again = await post(ENDPOINTS, 'create-once', body);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['idempotent-secrets-withheld']).toBe('/signingSecret');
    expect(again.headers.location).toBe(first.headers.location);
    expect(again.body).toEqual({ ...first.body, signingSecret: null });
    expect(JSON.stringify(again.body)).not.toContain(secret);

    // Still withheld after the endpoint is deleted: the kept answer never had it.
    await t.app
      .http(host)
      .delete(`${ENDPOINTS}/${first.body.id}`)
      .set('Cookie', (await signedIn()).cookie)
      .expect(204);
    const late = await post(ENDPOINTS, 'create-once', body);
    expect(late.status).toBe(201);
    expect(late.body.signingSecret).toBeNull();
    expect(JSON.stringify(late.body)).not.toContain(secret);
  });

  it('rotate-secret: the key’s row holds no secret; a replay, after another rotation too, answers null', async () => {
    const created = await post(ENDPOINTS, 'create-for-rotation', {
      url: 'https://hooks.example.com/rotated',
      events: ['*'],
    });
    expect(created.status).toBe(201);
    const rotatePath = `${ENDPOINTS}/${created.body.id}/rotate-secret`;
    const first = await post(rotatePath, 'rotate-once', { overlapHours: 1 });
    expect(first.status).toBe(200);
    const secret = first.body.signingSecret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(created.body.signingSecret);
    await expectNowhere(secret);
    await expectNowhere(created.body.signingSecret as string);

    const again = await post(rotatePath, 'rotate-once', { overlapHours: 1 });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['idempotent-secrets-withheld']).toBe('/signingSecret');
    expect(again.body).toEqual({ ...first.body, signingSecret: null });

    const second = await post(rotatePath, 'rotate-twice', {});
    expect(second.status).toBe(200);
    await expectNowhere(second.body.signingSecret as string);
    const replayed = await post(rotatePath, 'rotate-once', { overlapHours: 1 });
    expect(replayed.body.signingSecret).toBeNull();
    expect(JSON.stringify(replayed.body)).not.toContain(secret);
  });

  it('an answer whose secret field was null anyway (send-test-event) is replayed as it was', async () => {
    const created = await post(ENDPOINTS, 'create-for-test', { url: 'https://hooks.example.com/test', events: ['*'] });
    const first = await post(`${ENDPOINTS}/${created.body.id}/send-test-event`, 'test-once', {});
    expect(first.status).toBe(200);
    expect(first.body.deliveryId).toMatch(/^[0-9a-f-]{36}$/);
    const again = await post(`${ENDPOINTS}/${created.body.id}/send-test-event`, 'test-once', {});
    expect(again.headers['idempotent-replayed']).toBe('true');
    // The delivery id is no secret: replayed as it was.
    expect(again.body.deliveryId).toBe(first.body.deliveryId);
    // signingSecret was null in the first answer too: the body is the same, and the header names the
    // answer's secret field all the same (a replay never carries one).
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-secrets-withheld']).toBe('/signingSecret');
  });
});
