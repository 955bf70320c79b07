import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { taskModule } from '../../modules/task/index.ts';

/**
 * Issue 50, point 3: a module's events are written once, in the `publishes` lists of its commands,
 * hooks, routes and jobs; the module lists none of them again. An event may declare its payload's
 * schema (ModuleDefinition.eventPayloads), which the catalog shows (and webhook consumers read
 * there: docs/webhooks.md). The publish-time check is in test/framework/publish-checks.test.ts.
 */
const t = useTestApp({ customers: ['events'] });

describe("a module's events, derived from its publishes lists", () => {
  it('the task module lists no events, and has its four from its commands, hooks and job', () => {
    expect(taskModule.events).toBeUndefined();
    expect([...(t.app.services.registry.eventsByModule.get('task') ?? [])].sort()).toEqual(
      ['task.assigned', 'task.resolved', 'task.sla_breached', 'task.unassigned'].sort(),
    );
    for (const event of ['task.assigned', 'task.sla_breached']) expect(t.app.services.registry.events).toContain(event);
  });

  it("the catalog shows each event's declared payload schema beside the resource's events", async () => {
    const who = await signInAs(t.app, t.events, ['task:read']);
    const res = await t.app.http('events.localhost').get('/api/v1/admin/resources').set('Cookie', who.cookie);
    expect(res.status).toBe(200);
    const task = res.body.resources.find((r: { key: string }) => r.key === 'task.task');
    expect(task.events).toEqual(expect.arrayContaining(['task.assigned', 'task.resolved']));
    expect(task.eventPayloads['task.assigned']).toMatchObject({
      type: 'object',
      required: ['id', 'assigneeId'],
      properties: { id: { type: 'string', format: 'uuid' }, assigneeId: { type: 'string', format: 'uuid' } },
      additionalProperties: false,
    });
    expect(task.eventPayloads['task.resolved'].required).toEqual(['id']);
  });
});
