import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { deliverOutbox } from '../modules/auth/fixtures.ts';
import { neverRecordedNames } from '../../framework/history/history-plan.ts';
import type { MemoryMailbox } from '../../framework/mail/mailer.ts';

/**
 * Issue 46, point 1: no secret reaches a revision, whatever the module. Two nets over every
 * revision the secret-bearing routes leave: the names the declarations say are never recorded
 * (secret fields, fields declared unrecorded, a table's extra columns such as a password hash or a
 * signing secret) appear in none, for every entity of every installed module; and the secret
 * values themselves (passwords, hashes, raw tokens, signing secrets, as answered or as stored)
 * appear nowhere in a revision's text.
 */
const t = useTestApp({ role: 'all', customers: ['vault'] });
const host = 'vault.localhost';
const PASSWORD = 'Correct-Horse-Battery-46';

interface StoredRevision {
  entity: string;
  operation: string;
  old_values: Record<string, unknown>;
  new_values: Record<string, unknown>;
  text: string;
}

const storedRevisions = async () =>
  (
    await t.app.services.db.pool.query<StoredRevision>(
      `select entity, operation, old_values, new_values, row_to_json(r)::text as text from revisions r where tenant_id = $1`,
      [t.vault.id],
    )
  ).rows;

/** Every value of these columns in the tenant's rows of a table, as text (a bytea as the hex PostgreSQL prints). */
async function storedValues(table: string, columns: readonly string[]): Promise<string[]> {
  const values: string[] = [];
  for (const column of columns) {
    const { rows } = await t.app.services.db.pool.query<{ value: string | null }>(
      `select case when pg_typeof(${column}) = 'bytea'::regtype then encode(${column}::bytea, 'hex') else ${column}::text end as value
         from ${table} where tenant_id = $1 and ${column} is not null`,
      [t.vault.id],
    );
    for (const row of rows) if (row.value) values.push(row.value);
  }
  return values;
}

describe('no secret reaches a revision', () => {
  it('the declarations name the secrets no revision may carry, in every module that has them', () => {
    const names = new Map(
      t.app.services.registry.entities.map((entity) => [entity.names.key, neverRecordedNames(entity)]),
    );
    // The declarations this test rests on: if one stopped naming its secret, the scan below would miss it.
    expect(names.get('user.user')).toEqual(expect.arrayContaining(['password_hash', 'passwordHash']));
    expect(names.get('webhook.endpoint')).toEqual(
      expect.arrayContaining(['signingSecret', 'secret', 'previous_secret', 'previousSecret']),
    );
    expect(names.get('testkit.widget')).toEqual(expect.arrayContaining(['note']));
  });

  it('after every secret-bearing route: no revision of any entity holds a never-recorded field or a secret value', async () => {
    const admin = await signInAs(t.app, t.vault, ['*']);
    const http = () => t.app.http(host);
    const secrets: string[] = [PASSWORD, `${PASSWORD}, changed`];

    // People: an invitation (a set-password token, mailed), a person created, a password set by an admin, a sign-in
    // (a session), a change of one's own password.
    const invited = await http()
      .post('/api/v1/user/invitations')
      .set('Cookie', admin.cookie)
      .send({ email: 'grace@vault.test', displayName: 'Grace' });
    expect(invited.status, JSON.stringify(invited.body)).toBe(201);
    // And a person made through the entity's own create (the invitation writes the table itself).
    const created = await http()
      .post('/api/v1/user/users')
      .set('Cookie', admin.cookie)
      .send({ email: 'ada@vault.test' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const userId = created.body.id as string;
    await deliverOutbox(t.app);
    const mailbox = t.app.services.mailer as MemoryMailbox;
    for (const message of mailbox.messages) {
      for (const token of JSON.stringify(message).match(/token=([A-Za-z0-9_-]{16,})/g) ?? [])
        secrets.push(token.slice('token='.length));
    }
    // The invitation's link carried its token.
    expect(secrets.length).toBeGreaterThan(2);
    const set = await http()
      .post(`/api/v1/user/users/${userId}/set-password`)
      .set('Cookie', admin.cookie)
      .send({ password: PASSWORD });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const login = await http().post('/api/v1/auth/login').send({ email: 'ada@vault.test', password: PASSWORD });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
    const session = String(login.headers['set-cookie']).match(/app_session=([^;]+)/)![1]!;
    secrets.push(session);
    const changed = await http()
      .post('/api/v1/auth/password')
      .set('Cookie', `app_session=${session}`)
      .send({ currentPassword: PASSWORD, newPassword: `${PASSWORD}, changed` });
    expect(changed.status, JSON.stringify(changed.body)).toBe(204);
    const renamed = await http()
      .patch(`/api/v1/user/users/${userId}`)
      .set('Cookie', admin.cookie)
      .send({ displayName: 'Ada' });
    expect(renamed.status).toBe(200);

    // A personal access token, made and used for a write that keeps history.
    const token = await http()
      .post('/api/v1/auth/tokens')
      .set('Cookie', admin.cookie)
      .send({ name: 'deploy script', permissions: ['task:update', 'task:read'] });
    expect(token.status, JSON.stringify(token.body)).toBe(201);
    secrets.push(token.body.token as string);
    const task = await http()
      .post('/api/v1/task/tasks')
      .set('Authorization', `Bearer ${token.body.token}`)
      .send({ title: 'Rotate the keys', priority: 'high', deadline: '2031-01-01T00:00:00Z' });
    expect(task.status, JSON.stringify(task.body)).toBe(201);

    // A webhook endpoint: its signing secret made, rotated (a change of no field: no revision), and
    // the endpoint changed and deleted.
    const endpoint = await http()
      .post('/api/v1/webhook/endpoints')
      .set('Cookie', admin.cookie)
      .send({ url: 'https://hooks.example.com/vault', events: ['*'] });
    expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
    secrets.push(endpoint.body.signingSecret as string);
    const rotated = await http()
      .post(`/api/v1/webhook/endpoints/${endpoint.body.id}/rotate-secret`)
      .set('Cookie', admin.cookie)
      .send({ overlapHours: 1 });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    secrets.push(rotated.body.signingSecret as string);
    expect(
      (
        await http()
          .patch(`/api/v1/webhook/endpoints/${endpoint.body.id}`)
          .set('Cookie', admin.cookie)
          .send({ url: 'https://hooks.example.com/vault-2' })
      ).status,
    ).toBe(200);

    // A field declared unrecorded (the test kit's widget note), set and changed.
    const widget = await http()
      .post('/api/v1/testkit/widgets')
      .set('Cookie', admin.cookie)
      .send({ name: 'vault widget', size: 1, color: 'red', note: 'note-kept-out-of-history-1' });
    expect(widget.status, JSON.stringify(widget.body)).toBe(201);
    expect(
      (
        await http()
          .patch(`/api/v1/testkit/widgets/${widget.body.id}`)
          .set('Cookie', admin.cookie)
          .send({ note: 'note-kept-out-of-history-2', size: 2 })
      ).status,
    ).toBe(200);
    secrets.push('note-kept-out-of-history-1', 'note-kept-out-of-history-2');
    expect(
      (await http().delete(`/api/v1/webhook/endpoints/${endpoint.body.id}`).set('Cookie', admin.cookie)).status,
    ).toBe(204);

    // The secrets as stored: password hashes, token and session hashes, signing secrets.
    const users = t.app.services.registry.entity('user.user')!.names.table;
    const endpoints = t.app.services.registry.entity('webhook.endpoint')!.names.table;
    const stored = [
      ...(await storedValues(users, ['password_hash'])),
      ...(await storedValues('sessions', ['id_hash'])),
      ...(await storedValues('access_tokens', ['token_hash'])),
      ...(await storedValues('set_password_tokens', ['token_hash'])),
      ...(await storedValues(endpoints, ['secret', 'previous_secret'])),
    ];
    expect(stored.some((value) => value.startsWith('$argon2id$'))).toBe(true);
    secrets.push(...stored);
    for (const secret of secrets) expect(secret.length, 'a secret worth looking for').toBeGreaterThanOrEqual(16);

    const revisions = await storedRevisions();
    // Every secret-bearing entity left revisions to scan.
    const entities = new Set(revisions.map((r) => r.entity));
    for (const key of ['user.user', 'webhook.endpoint', 'task.task', 'testkit.widget']) expect(entities).toContain(key);
    expect(revisions.filter((r) => r.entity === 'user.user').map((r) => r.operation)).toEqual(
      expect.arrayContaining(['create', 'set-password', 'update']),
    );
    expect(revisions.filter((r) => r.entity === 'webhook.endpoint').map((r) => r.operation)).toEqual(
      expect.arrayContaining(['create', 'update', 'delete']),
    );

    const registry = t.app.services.registry;
    for (const revision of revisions) {
      const never = new Set(neverRecordedNames(registry.entity(revision.entity)!));
      const fields = [...Object.keys(revision.old_values), ...Object.keys(revision.new_values)];
      expect(
        fields.filter((field) => never.has(field)),
        `${revision.entity} ${revision.operation}`,
      ).toEqual([]);
      for (const secret of secrets)
        expect(revision.text, `${revision.entity} ${revision.operation}`).not.toContain(secret);
      expect(revision.text).not.toMatch(/argon2|whsec_/);
    }
  });
});
