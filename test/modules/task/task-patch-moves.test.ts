import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { signInAs, type SignedIn } from '../../helpers/app.ts';
import { task } from '../../../modules/task/task.entity.ts';
import { TASK_STATUSES } from '../../../modules/task/task-status.ts';

// Issue 42, point 2: the task's declared PATCH moves (`states.patchMoves`, which the admin edit form
// offers) are exactly the moves the API accepts, from every status, with and without an assignee.

const t = useTestApp({ customers: ['acme'] });
const HOST = 'acme.localhost';
let manager: SignedIn;
let worker: SignedIn;

beforeAll(async () => {
  manager = await signInAs(t.app, t.acme, ['task:read', 'task:update']);
  worker = await signInAs(t.app, t.acme, []);
});

describe('the declared status moves of a task', () => {
  it('the API accepts a PATCH of status exactly where the declaration offers it', async () => {
    const created = await t.app
      .http(HOST)
      .post('/api/v1/task/tasks')
      .set('Cookie', manager.cookie)
      .send({ title: 'Moves', priority: 'low', deadline: '2099-01-01T00:00:00Z' })
      .expect(201);
    const id = created.body.id as string;
    const declared = task.states!.patchMoves!;
    const mismatches: string[] = [];
    for (const from of TASK_STATUSES) {
      for (const assigneeId of [null, worker.userId]) {
        const offered = declared({ status: from, assigneeId } as never);
        for (const to of TASK_STATUSES.filter((s) => s !== from)) {
          // The task as it stands, set in place: each move is tried from the same state.
          await t.app.services.db.pool.query('update tasks set status = $1, assignee_id = $2 where id = $3', [
            from,
            assigneeId,
            id,
          ]);
          const res = await t.app
            .http(HOST)
            .patch(`/api/v1/task/tasks/${id}`)
            .set('Cookie', manager.cookie)
            .send({ status: to });
          const accepted = res.status === 200;
          if (accepted !== offered.includes(to))
            mismatches.push(`${from} → ${to} (assignee ${assigneeId ? 'set' : 'none'}): API ${res.status}`);
          if (!accepted) expect(res.body.code).toBe('INVALID_TRANSITION');
        }
      }
    }
    expect(mismatches).toEqual([]);
    // Issue 50, point 3: the framework refuses from the declaration alone (the task has no hook for
    // it), naming the moves there are and the command that reaches the asked state.
    expect(task.hooks?.beforeWrite).toBeUndefined();
    await t.app.services.db.pool.query('update tasks set status = $1, assignee_id = $2 where id = $3', [
      'in_progress',
      worker.userId,
      id,
    ]);
    const refused = await t.app
      .http(HOST)
      .patch(`/api/v1/task/tasks/${id}`)
      .set('Cookie', manager.cookie)
      .send({ status: 'resolved' });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({ code: 'INVALID_TRANSITION', field: 'status', state: 'in_progress' });
    expect(refused.body.detail).toBe(
      'This task is in progress: an update cannot move it to resolved. An update cannot move it from there. To move it to resolved, use POST /api/v1/task/tasks/{id}/resolve.',
    );
    // What the declaration offers, for the record.
    expect(declared({ status: 'open', assigneeId: null } as never)).toEqual([]);
    expect(declared({ status: 'acknowledged', assigneeId: worker.userId } as never)).toEqual(['in_progress']);
    expect(declared({ status: 'resolved', assigneeId: worker.userId } as never)).toEqual(['in_progress', 'closed']);
  });
});
