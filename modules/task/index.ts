import { defineModule, entity } from '../../framework/entity/define.ts';
import { task } from './task.entity.ts';
import { slaSweep } from './sla-sweep.ts';

/** Work items with a deadline, assignment, resolution and a recorded SLA breach. */
export const taskModule = defineModule({
  name: 'task',
  description: 'Work items with a deadline and a recorded SLA breach',
  permissions: [
    { name: 'task:read', description: 'Task list and reads; the Tasks navigation entry' },
    {
      name: 'task:update',
      description: 'Task create, update, delete and the assign, unassign, resolve and check-sla commands',
    },
  ],
  events: ['task.assigned', 'task.unassigned', 'task.resolved', 'task.sla_breached'],
  entities: [entity(task)],
  jobs: [slaSweep],
  admin: {
    label: 'Tasks',
    eventLabels: { 'task.sla_breached': 'Missed its due date' },
    sidebar: [{ label: 'Tasks', path: '/admin/task/tasks', order: 40 }],
  },
});
