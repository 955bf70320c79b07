import { describe, expect, it } from 'vitest';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';

// Issue 46's acceptance over HTTP: a task's history and a restore to its first revision.
const t = useTestApp({ customers: ['hist'] });
const host = 'hist.localhost';
const BASE = '/api/v1/task/tasks';

const inDays = (days: number) => new Date(Date.UTC(2031, 0, 1 + days, 9)).toISOString();

interface Revision {
  id: string;
  at: string;
  actor: { kind: string; userId: string | null; name: string | null };
  operation: string;
  changes: { field: string; old: unknown; new: unknown }[];
}

const changesOf = (revision: Revision) => Object.fromEntries(revision.changes.map((c) => [c.field, [c.old, c.new]]));

describe('a task’s history', () => {
  let manager: SignedIn;
  let assignee: SignedIn;
  let taskId: string;

  it('a task created, patched twice and assigned shows four revisions, newest first, with the actor and each changed field’s old and new value', async () => {
    manager = await signInAs(t.app, t.hist, ['task:read', 'task:update']);
    assignee = await signInAs(t.app, t.hist, ['task:read']);
    const http = () => t.app.http(host);
    const created = await http()
      .post(BASE)
      .set('Cookie', manager.cookie)
      .send({ title: 'Write the report', priority: 'medium', deadline: inDays(1) });
    expect(created.status).toBe(201);
    taskId = created.body.id;
    expect(
      (await http().patch(`${BASE}/${taskId}`).set('Cookie', manager.cookie).send({ title: 'Write the annual report' }))
        .status,
    ).toBe(200);
    expect(
      (
        await http()
          .patch(`${BASE}/${taskId}`)
          .set('Cookie', manager.cookie)
          .send({ deadline: inDays(5), priority: 'high' })
      ).status,
    ).toBe(200);
    expect(
      (
        await http()
          .post(`${BASE}/${taskId}/assign`)
          .set('Cookie', manager.cookie)
          .send({ assigneeId: assignee.userId })
      ).status,
    ).toBe(200);

    const history = await http().get(`${BASE}/${taskId}/history`).set('Cookie', manager.cookie);
    expect(history.status).toBe(200);
    const items = history.body.items as Revision[];
    expect(history.body.total).toBe(4);
    expect(items.map((r) => r.operation)).toEqual(['assign', 'update', 'update', 'create']);
    // Newest first: the ids (time-ordered) and the times descend.
    expect([...items].sort((a, b) => (a.id < b.id ? 1 : -1)).map((r) => r.id)).toEqual(items.map((r) => r.id));
    for (const revision of items) expect(revision.actor).toEqual({ kind: 'user', userId: manager.userId, name: null });

    const [assign, second, first, create] = items as [Revision, Revision, Revision, Revision];
    expect(changesOf(assign)).toEqual({
      status: ['open', 'acknowledged'],
      assigneeId: [null, assignee.userId],
    });
    expect(changesOf(second)).toEqual({ priority: ['medium', 'high'], deadline: [inDays(1), inDays(5)] });
    expect(changesOf(first)).toEqual({ title: ['Write the report', 'Write the annual report'] });
    expect(changesOf(create)).toMatchObject({
      title: [null, 'Write the report'],
      status: [null, 'open'],
      priority: [null, 'medium'],
      deadline: [null, inDays(1)],
      slaBreached: [null, false],
      assigneeId: [null, null],
    });
  });

  it('a restore to the first revision brings back the original title and deadline and keeps the assignee', async () => {
    const http = () => t.app.http(host);
    const before = (await http().get(`${BASE}/${taskId}/history`).set('Cookie', manager.cookie)).body
      .items as Revision[];
    const first = before.at(-1)!;
    const restored = await http()
      .post(`${BASE}/${taskId}/restore`)
      .set('Cookie', manager.cookie)
      .send({ revision: first.id });
    expect(restored.status).toBe(200);
    expect(restored.body.row).toMatchObject({
      id: taskId,
      title: 'Write the report',
      deadline: inDays(1),
      priority: 'medium',
      assigneeId: assignee.userId,
    });
    expect(restored.body.restored.sort()).toEqual(['deadline', 'priority', 'title']);
    // The assignee and the status the assign command moved belong to commands: left as they are.
    expect(restored.body.kept).toEqual(expect.arrayContaining([{ field: 'assigneeId', reason: 'command-owned' }]));
    const read = await http().get(`${BASE}/${taskId}`).set('Cookie', manager.cookie);
    expect(read.body).toMatchObject({ title: 'Write the report', deadline: inDays(1), assigneeId: assignee.userId });

    const after = (await http().get(`${BASE}/${taskId}/history`).set('Cookie', manager.cookie)).body
      .items as Revision[];
    expect(after).toHaveLength(5);
    expect(after[0]!.operation).toBe('restore');
    expect(changesOf(after[0]!)).toEqual({
      title: ['Write the annual report', 'Write the report'],
      priority: ['high', 'medium'],
      deadline: [inDays(5), inDays(1)],
    });

    // Restoring to the same values again changes nothing: no revision, no event.
    const again = await http()
      .post(`${BASE}/${taskId}/restore`)
      .set('Cookie', manager.cookie)
      .send({ revision: first.id });
    expect(again.status).toBe(200);
    expect(again.body.restored).toEqual([]);
    expect(
      ((await http().get(`${BASE}/${taskId}/history`).set('Cookie', manager.cookie)).body.items as Revision[]).length,
    ).toBe(5);
  });

  it('a member without task:read gets 403 on a task’s history', async () => {
    const outsider = await signInAs(t.app, t.hist, []);
    const res = await t.app.http(host).get(`${BASE}/${taskId}/history`).set('Cookie', outsider.cookie);
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('AUTH_FORBIDDEN');
  });
});
