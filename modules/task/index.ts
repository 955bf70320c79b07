import Type from 'typebox';
import { defineModule, entity } from '../../framework/entity/define.ts';
import { task } from './task.entity.ts';
import { slaSweep } from './sla-sweep.ts';

const TaskEvent = Type.Object(
  { id: Type.String({ format: 'uuid', description: 'The task' }) },
  {
    additionalProperties: false,
  },
);
const TaskAssignment = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'The task' }),
    assigneeId: Type.String({
      format: 'uuid',
      description: 'The user assigned (task.assigned) or taken off (task.unassigned)',
    }),
  },
  { additionalProperties: false },
);

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
  // Its events are those its commands and hooks publish (task.assigned, task.unassigned,
  // task.resolved, task.sla_breached), each written once there; their payloads are declared here.
  eventPayloads: {
    'task.assigned': TaskAssignment,
    'task.unassigned': TaskAssignment,
    'task.resolved': TaskEvent,
    'task.sla_breached': TaskEvent,
  },
  entities: [entity(task)],
  jobs: [slaSweep],
  admin: {
    label: 'Tasks',
    eventLabels: { 'task.sla_breached': 'Missed its due date' },
    sidebar: [{ label: 'Tasks', path: '/admin/task/tasks', order: 40 }],
  },
});
