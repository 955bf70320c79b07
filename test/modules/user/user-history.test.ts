import { describe, expect, it } from 'vitest';
import { signInAs } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';

// Issue 46's acceptance: a user's history never shows a password hash.
const t = useTestApp({ customers: ['people'] });
const host = 'people.localhost';
const USERS = '/api/v1/user/users';
const PASSWORD = 'Correct-Horse-Battery-9';

describe('a user’s history', () => {
  it('never shows a password hash, while it shows who set the password and what it changed', async () => {
    const manager = await signInAs(t.app, t.people, ['user:read', 'user:manage']);
    const http = () => t.app.http(host);
    const created = await http().post(USERS).set('Cookie', manager.cookie).send({ email: 'ada@people.test' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(
      (await http().post(`${USERS}/${id}/set-password`).set('Cookie', manager.cookie).send({ password: PASSWORD }))
        .status,
    ).toBe(200);
    expect(
      (await http().patch(`${USERS}/${id}`).set('Cookie', manager.cookie).send({ displayName: 'Ada' })).status,
    ).toBe(200);
    expect(
      (
        await http()
          .post(`${USERS}/${id}/set-password`)
          .set('Cookie', manager.cookie)
          .send({ password: `${PASSWORD}!` })
      ).status,
    ).toBe(200);

    const history = await http().get(`${USERS}/${id}/history`).set('Cookie', manager.cookie);
    expect(history.status).toBe(200);
    const operations = history.body.items.map((r: { operation: string }) => r.operation);
    expect(operations).toEqual(['update', 'set-password', 'create']);
    const setPassword = history.body.items[1];
    expect(setPassword).toMatchObject({
      actor: { kind: 'user', userId: manager.userId },
      changes: [{ field: 'status', old: 'invited', new: 'active' }],
    });

    const { rows } = await t.app.services.db.pool.query<{ hash: string }>(
      'select password_hash as hash from users where id = $1',
      [id],
    );
    const hash = rows[0]!.hash;
    expect(hash).toMatch(/^\$argon2id\$/);
    const shown = JSON.stringify(history.body);
    expect(shown).not.toMatch(/password_?hash|passwordHash|argon2/i);
    expect(shown).not.toContain(hash);
    expect(shown).not.toContain(PASSWORD);
    const stored = await t.app.services.db.pool.query<{ text: string }>(
      'select old_values::text || new_values::text as text from revisions where row_id = $1',
      [id],
    );
    for (const { text } of stored.rows) {
      expect(text).not.toContain(hash);
      expect(text).not.toMatch(/argon2|password/i);
    }
  });
});
