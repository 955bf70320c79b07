import Type from 'typebox';
import './tasks-table.ts';
import { defineCommand, defineEntity } from '../../framework/entity/define.ts';
import { formatDateTime } from '../../framework/format.ts';
import { notify, TITLE_MAX } from '../notification/notify.ts';
import { taskFieldText, taskFields } from './task.fields.ts';
import {
  ASSIGNABLE,
  breachDue,
  FINISHED,
  patchMoves,
  RESOLVABLE,
  STATUS_GRAPH,
  UNASSIGNABLE,
  type TaskStatus,
} from './task-status.ts';

const command = defineCommand(taskFields);

/** Where an assignee finds the task. */
export const taskLink = (id: string): string => `/admin/task/tasks/${id}`;

/**
 * The assignee's notice title within notify's TITLE_MAX (UTF-16 units), cut with an ellipsis
 * between two characters, never inside one: half an emoji's surrogate pair would be stored as U+FFFD.
 */
function noticeTitle(title: string): string {
  if (title.length <= TITLE_MAX) return title;
  const cut = title.slice(0, TITLE_MAX - 1);
  return `${/[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut}…`;
}

const assign = command({
  summary: 'Assign a task to a user of the tenant',
  admin: {
    label: 'Assign',
    intro: 'Choose who does this task. They are told by a notification and, when they have an address, by mail.',
    fields: {
      assigneeId: {
        label: 'Person',
        hint: 'Someone of this tenant who can sign in and read tasks.',
        messages: { format: 'Choose a person.', required: 'Choose a person.', reference: 'Choose a person.' },
      },
    },
  },
  description:
    'Sets assigneeId and moves an open task to acknowledged (other statuses stay), publishes task.assigned and notifies the assignee, with a mail when they have an address. The assignee must be an active user of the tenant whose roles grant task:read, so that they can open the task their notification links to: anyone else (an unknown, invited or deactivated user, or one without task:read) is 422 VALIDATION_FAILED, its message saying why. A resolved or closed task is 409 INVALID_TRANSITION (a finished task takes no assignee). Assigning the same person again changes nothing and publishes nothing.',
  body: Type.Object(
    {
      assigneeId: Type.String({
        format: 'uuid',
        description: 'An active user of this tenant whose roles grant task:read.',
      }),
    },
    { additionalProperties: false },
  ),
  references: { assigneeId: 'user.user' },
  // Checked by the framework before run (framework/access/actors.ts); the picker offers only such people.
  actors: { assigneeId: 'task:read' },
  states: { from: ASSIGNABLE },
  publishes: ['task.assigned', 'notification.created', 'notification.email_requested'],
  async run(ctx, row, body) {
    if (row.assigneeId === body.assigneeId) return;
    ctx.publish('task.assigned', { id: row.id, assigneeId: body.assigneeId });
    await notify(ctx, {
      recipientId: body.assigneeId,
      title: noticeTitle(`Task assigned to you: ${row.title}`),
      body: `You were assigned the task "${row.title}" (priority ${row.priority}), due ${formatDateTime(row.deadline)}.`,
      link: taskLink(row.id),
      email: true,
    });
    return { assigneeId: body.assigneeId, status: row.status === 'open' ? 'acknowledged' : row.status };
  },
});

const unassign = command({
  summary: 'Take the assignee off a task',
  admin: {
    label: 'Unassign',
    intro: 'Nobody will be doing this task any more. It goes back to open, to be assigned again.',
  },
  description:
    "Clears assigneeId and moves the task back to open (the status graph's edge from acknowledged or in_progress to open, for a task with nobody assigned), publishing task.unassigned with the assignee it had. From acknowledged or in_progress; an open task has nobody assigned, so it changes nothing and publishes nothing; a resolved or closed task is 409 INVALID_TRANSITION (a finished task keeps who did it).",
  states: { from: UNASSIGNABLE, unchanged: ['open'] },
  publishes: ['task.unassigned'],
  async run(ctx, row) {
    if (row.assigneeId === null) return;
    ctx.publish('task.unassigned', { id: row.id, assigneeId: row.assigneeId });
    return { assigneeId: null, status: 'open' };
  },
});

const resolve = command({
  summary: 'Resolve a task',
  admin: {
    label: 'Resolve',
    intro: 'Record what was done. The task is then resolved; it can be reopened later.',
    fields: { resolution: { label: 'Resolution', hint: 'What was done to resolve the task.' } },
  },
  description:
    'Sets resolvedAt (now) and resolution and moves the task to resolved, publishing task.resolved. Allowed from open, acknowledged and in_progress; from resolved or closed it is 409 INVALID_TRANSITION. A deadline that passed before the resolution is recorded as a breach first.',
  body: Type.Object({ resolution: Type.String({ minLength: 1, maxLength: 10000 }) }, { additionalProperties: false }),
  states: { from: RESOLVABLE, to: 'resolved' },
  publishes: ['task.resolved', 'task.sla_breached'],
  async run(ctx, row, body) {
    const breached = breachDue(row, ctx.now);
    if (breached) ctx.publish('task.sla_breached', { id: row.id });
    ctx.publish('task.resolved', { id: row.id });
    return {
      status: 'resolved',
      resolvedAt: ctx.now,
      resolution: body.resolution,
      ...(breached ? { slaBreached: true } : {}),
    };
  },
});

const checkSla = command({
  summary: 'Check the task’s deadline now',
  admin: {
    label: 'Check the deadline',
    intro: 'Records now that the task missed its due date, if the date has passed and it is not resolved yet.',
  },
  description:
    'Marks slaBreached and publishes task.sla_breached when the deadline has passed and the task is not resolved or closed. Once per task: a breach already marked changes nothing and publishes nothing.',
  publishes: ['task.sla_breached'],
  async run(ctx, row) {
    if (!breachDue(row, ctx.now)) return;
    ctx.publish('task.sla_breached', { id: row.id });
    return { slaBreached: true };
  },
});

/**
 * A work item with a deadline. The assignee and the resolution belong to their commands, the
 * breach to the service: hooks, check-sla and the SLA sweep mark it once, and nothing clears it.
 */
export const task = defineEntity({
  module: 'task',
  name: 'task',
  description: `Work items with a deadline, an assignee and a recorded SLA breach. ${STATUS_GRAPH}`,
  fields: taskFields,
  searchable: ['title'],
  states: {
    field: 'status',
    initial: ['open'],
    refusal: 'INVALID_TRANSITION',
    // The PATCH edges of the status graph: the framework refuses the others (INVALID_TRANSITION), the edit form offers only these.
    patchMoves: (row) => patchMoves(row.status as TaskStatus, row.assigneeId ?? null),
  },
  commandOwned: {
    assigneeId: ['assign', 'unassign'],
    resolvedAt: 'resolve',
    resolution: 'resolve',
    slaBreached: 'check-sla',
  },
  permissions: { read: 'task:read', write: 'task:update' },
  sortable: ['title', 'status', 'deadline'],
  // The list's everyday question, "open or acknowledged, overdue, soonest first"
  // (status=in.(open,acknowledged)&deadline=lt.now&sort=deadline): read from this index however many
  // finished tasks came before (test/modules/task/task-list-plan.test.ts).
  indexes: [['status', 'deadline']],
  hookPublishes: ['task.sla_breached'],
  commands: { assign, unassign, resolve, 'check-sla': checkSla },
  hooks: {
    // A deadline already passed on arrival, or reached by an update or a command: marked once.
    async afterWrite(ctx, { op, row }) {
      if (op === 'delete' || !breachDue(row, ctx.now)) return;
      ctx.publish('task.sla_breached', { id: row.id });
      return { slaBreached: true };
    },
    // The deleted row keeps the record of a deadline it missed.
    async beforeDelete(ctx, { row }) {
      if (!breachDue(row, ctx.now)) return;
      await ctx.db
        .updateTable('tasks')
        .set({ sla_breached: true, updated_at: ctx.now })
        .where('id', '=', row.id)
        .execute();
      ctx.publish('task.sla_breached', { id: row.id });
    },
  },
  admin: {
    title: 'title',
    columns: ['title', 'status', 'priority', 'deadline', 'assigneeId', 'slaBreached'],
    references: { assigneeId: 'user.user' },
    fieldText: taskFieldText,
    // Lists mark a task whose deadline has passed while it is still to be done.
    overdue: { field: 'deadline', except: FINISHED },
    // The list's ready-made filter: what is late and still to be done, the most overdue first.
    filters: {
      presets: [
        {
          label: 'Overdue and not resolved',
          query: { deadline: 'lt.now', status: `not.in.(${FINISHED.join(',')})`, sort: 'deadline' },
        },
      ],
    },
  },
});
