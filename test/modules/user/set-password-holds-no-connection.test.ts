import { beforeEach, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import argon2 from 'argon2';
import { CompiledQuery } from 'kysely';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { signInAs } from '../../helpers/app.ts';
import { insideTransactionBody } from '../../../framework/db/pool.ts';
import { argon2Hasher, type PasswordHasher } from '../../../framework/access/password-verifier.ts';
import { addUser } from '../auth/fixtures.ts';
import { storedUser } from './support.ts';
import { PREVIEW_FIELD } from '../../../framework/admin/resource-pages/form-aids.ts';

// The set-password command hashes the new password (argon2id, ~100 ms of CPU) in its step before
// the transaction (CommandDefinition.beforeTransaction): through its REST route, its generated admin
// form and POST /api/v1/batch alike, no transaction of the request is open while it hashes, so no
// pool connection is held meanwhile. The app's hasher, watched through its documented seam
// (AppOptions.passwordHasher), records whether its caller is inside a transaction's body then (the
// pool's own record, framework/db/pool.ts), as password-work-holds-no-connection.test.ts does for
// sign-in and the password change.

/** Each hash a request made, whether a transaction of its was open meanwhile, and the hash made. */
const calls: { inTransaction: boolean }[] = [];
const made: string[] = [];
/** Run during the next hash, with no transaction open: what changes meanwhile. */
let duringHash: (() => Promise<void>) | undefined;

const watchedHasher: PasswordHasher = {
  async hash(plain) {
    calls.push({ inTransaction: insideTransactionBody() });
    const meanwhile = duringHash;
    duringHash = undefined;
    await meanwhile?.();
    const hash = await argon2Hasher.hash(plain);
    made.push(hash);
    return hash;
  },
};

const t = useTestApp({ customers: ['acme'], passwordHasher: watchedHasher });
const http = () => t.app.http('acme.localhost');

let manager: string;
beforeEach(async () => {
  manager ??= (await signInAs(t.app, t.acme, ['user:read', 'user:manage'])).cookie;
  calls.length = 0;
  made.length = 0;
  duringHash = undefined;
});

const invited = () => addUser(t.app, t.acme, { status: 'invited', password: null });
const setPasswordPath = (id: string) => `/api/v1/user/users/${id}/set-password`;
const hashOf = async (id: string) => (await storedUser(t.app, t.acme, id))!.password_hash;
const deactivateMeanwhile = (id: string) => async () => {
  await t.app.services.transactions.run(t.acme, (ctx) =>
    ctx.db.executeQuery(CompiledQuery.raw("update users set status = 'deactivated' where id = $1", [id])),
  );
};
const passwordEvents = async (id: string) =>
  (
    await t.app.services.db.pool.query<{ payload: { id: string } }>(
      `select payload from outbox where name = 'user.password_set'`,
    )
  ).rows.filter((row) => row.payload.id === id);

/** The form token of an admin page, as the browser holding the manager's cookie gets it. */
async function formToken(path: string): Promise<{ cookie: string; csrf: string }> {
  const page = await http().get(path).set('Cookie', manager);
  expect(page.status).toBe(200);
  const set = ([] as string[]).concat(page.headers['set-cookie'] ?? []).map((c) => c.split(';', 1)[0]!);
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)![1]!;
  return { cookie: [manager, ...set].join('; '), csrf };
}

const postForm = async (id: string, password: string) => {
  const path = `/admin/user/users/${id}/set-password`;
  const token = await formToken(path);
  return http().post(path).set('Cookie', token.cookie).type('form').send({ csrf: token.csrf, password });
};

const batch = (requests: unknown[], key?: string) => {
  const req = http().post('/api/v1/batch').set('Cookie', manager);
  return (key ? req.set('Idempotency-Key', key) : req).send({ requests });
};

describe('set-password hashes with no transaction open', () => {
  it('through its REST route', async () => {
    const user = await invited();
    const res = await http().post(setPasswordPath(user.id)).set('Cookie', manager).send({ password: 'first secret' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe('active');
    expect(calls).toEqual([{ inTransaction: false }]);
    expect(await hashOf(user.id)).toBe(made[0]);
    expect(await argon2.verify(made[0]!, 'first secret')).toBe(true);
  });

  it('through the generated admin form', async () => {
    const user = await invited();
    const res = await postForm(user.id, 'a form secret');
    expect(res.status, res.text).toBeLessThan(400);
    expect(calls).toEqual([{ inTransaction: false }]);
    expect(await hashOf(user.id)).toBe(made[0]);
    expect((await storedUser(t.app, t.acme, user.id))!.status).toBe('active');
  });

  it('inside a batch: every request prepared before the batch’s one transaction opens', async () => {
    const [ann, bob] = [await invited(), await invited()];
    const res = await batch([
      { method: 'POST', path: setPasswordPath(ann.id), body: { password: 'ann secret one' } },
      { method: 'POST', path: setPasswordPath(bob.id), body: { password: 'bob secret two' } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results.map((r: { status: number }) => r.status)).toEqual([200, 200]);
    expect(calls).toEqual([{ inTransaction: false }, { inTransaction: false }]);
    expect(await hashOf(ann.id)).toBe(made[0]);
    expect(await hashOf(bob.id)).toBe(made[1]);
  });

  it('the admin form asked again (a preview) hashes nothing and stores nothing', async () => {
    const user = await invited();
    const path = `/admin/user/users/${user.id}/set-password`;
    const token = await formToken(path);
    const res = await http()
      .post(path)
      .set('Cookie', token.cookie)
      .type('form')
      .send({ csrf: token.csrf, password: 'not yet sent', [PREVIEW_FIELD]: '1' });
    expect(res.status, res.text).toBe(200);
    expect(res.text).toContain(`action="${path}"`);
    expect(calls).toEqual([]);
    expect(await hashOf(user.id)).toBeNull();
  });
});

describe('a refusal before the transaction', () => {
  it('in a batch names its index, and nothing of the batch is applied', async () => {
    const [ann, bob] = [await invited(), await invited()];
    // Eight UTF-16 units (the schema's count) but four characters: the policy refuses it.
    const res = await batch([
      { method: 'POST', path: setPasswordPath(ann.id), body: { password: 'ann secret one' } },
      { method: 'POST', path: setPasswordPath(bob.id), body: { password: '😀😀😀😀' } },
    ]);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({
      code: 'VALIDATION_FAILED',
      index: 1,
      request: { method: 'POST', path: setPasswordPath(bob.id) },
      errors: [{ pointer: '/body/requests/1/body/password' }],
    });
    // The first was prepared; neither transaction ever opened.
    expect(calls).toEqual([{ inTransaction: false }]);
    expect(await hashOf(ann.id)).toBeNull();
    expect(await passwordEvents(ann.id)).toEqual([]);
  });

  it('through the admin form is the form again, its error beside the field, and nothing is hashed', async () => {
    const user = await invited();
    const res = await postForm(user.id, '😀😀😀😀');
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain(`action="/admin/user/users/${user.id}/set-password"`);
    expect(res.text).toMatch(/id="field-password-error">Use 8 to 1024 characters\./);
    expect(calls).toEqual([]);
    expect(await hashOf(user.id)).toBeNull();
  });

  it('a caller who may not set passwords prepares nothing, alone or in a batch', async () => {
    const reader = (await signInAs(t.app, t.acme, ['user:read'])).cookie;
    const user = await invited();
    const alone = await http().post(setPasswordPath(user.id)).set('Cookie', reader).send({ password: 'never hashed' });
    expect(alone.status).toBe(403);
    const inBatch = await http()
      .post('/api/v1/batch')
      .set('Cookie', reader)
      .send({ requests: [{ method: 'POST', path: setPasswordPath(user.id), body: { password: 'never hashed' } }] });
    expect(inBatch.status).toBe(403);
    expect(inBatch.body.index).toBe(0);
    expect(calls).toEqual([]);
  });
});

describe('what changes while the password is hashed', () => {
  it('a user deactivated meanwhile is refused in the transaction (REST), and nothing is stored', async () => {
    const user = await invited();
    duringHash = deactivateMeanwhile(user.id);
    const res = await http().post(setPasswordPath(user.id)).set('Cookie', manager).send({ password: 'too late now' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('INVALID_STATE');
    expect(calls).toEqual([{ inTransaction: false }]);
    expect(await hashOf(user.id)).toBeNull();
    expect(await passwordEvents(user.id)).toEqual([]);
  });

  it('a user deactivated meanwhile is refused in the batch’s transaction, with its index', async () => {
    const user = await invited();
    duringHash = deactivateMeanwhile(user.id);
    const res = await batch([{ method: 'POST', path: setPasswordPath(user.id), body: { password: 'too late now' } }]);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'INVALID_STATE', index: 0 });
    expect(await hashOf(user.id)).toBeNull();
  });

  it('a user deactivated meanwhile is refused through the admin form', async () => {
    const user = await invited();
    duringHash = deactivateMeanwhile(user.id);
    const res = await postForm(user.id, 'too late now');
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(await hashOf(user.id)).toBeNull();
  });
});

describe('the prepared hash is kept nowhere but the users row', () => {
  it('not in an answer, an event, a revision or an idempotency record, alone or in a batch', async () => {
    const [ann, bob] = [await invited(), await invited()];
    const alone = await http()
      .post(setPasswordPath(ann.id))
      .set('Cookie', manager)
      .set('Idempotency-Key', randomUUID())
      .send({ password: 'ann kept secret' });
    const batched = await batch(
      [{ method: 'POST', path: setPasswordPath(bob.id), body: { password: 'bob kept secret' } }],
      randomUUID(),
    );
    expect([alone.status, batched.status]).toEqual([200, 200]);
    expect(made).toHaveLength(2);
    const secrets = [...made, 'ann kept secret', 'bob kept secret'];
    const stored = async (sql: string) => JSON.stringify((await t.app.services.db.pool.query(sql)).rows);
    const places = [
      JSON.stringify(alone.body),
      JSON.stringify(batched.body),
      await stored('select * from outbox'),
      await stored('select * from idempotency_keys'),
      await stored('select * from revisions'),
    ];
    for (const place of places) for (const secret of secrets) expect(place).not.toContain(secret);
  });
});
