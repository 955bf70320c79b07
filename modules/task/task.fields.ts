import Type from 'typebox';
import { DateTime } from '../../framework/entity/date-time.ts';
import { WithDefault } from '../../framework/entity/storage.ts';
import { Markdown } from '../../framework/markdown/markdown-field.ts';
import { STATUS_GRAPH } from './task-status.ts';
import type { FieldTexts } from '../../framework/entity/field-text.ts';
import { StringEnum } from '../../framework/entity/string-enum.ts';

export const taskFields = {
  title: Type.String({
    minLength: 1,
    maxLength: 200,
    pattern: '^[^\\r\\n]*$',
    description: 'One line, 1 to 200 characters.',
    examples: ['Call the customer back', 'Renew the certificate'],
  }),
  description: Type.Optional(Markdown({ maxLength: 20000, description: 'Markdown text.' })),
  status: WithDefault(
    StringEnum(['open', 'acknowledged', 'in_progress', 'resolved', 'closed'], {
      description: `open, acknowledged, in_progress, resolved or closed. A new task is open (a create may only say open). ${STATUS_GRAPH}`,
    }),
    'open',
  ),
  priority: StringEnum(['low', 'medium', 'high', 'critical'], {
    description: 'From low to critical.',
  }),
  deadline: DateTime({
    description:
      'When the task is due. Once it has passed while the task is not resolved or closed, slaBreached becomes true for good.',
  }),
  assigneeId: Type.Optional(
    Type.String({ format: 'uuid', description: 'A user of the tenant; set by POST .../{id}/assign.' }),
  ),
  slaBreached: WithDefault(
    Type.Boolean({
      description:
        'True once the deadline passed before the task was resolved or closed. Set by the service only (hooks, check-sla, the SLA sweep); never cleared, also not by moving the deadline later.',
    }),
    false,
  ),
  resolvedAt: Type.Optional(DateTime({ description: 'Set by POST .../{id}/resolve.' })),
  resolution: Type.Optional(Type.String({ maxLength: 10000, description: 'Set by POST .../{id}/resolve.' })),
};

export type TaskFields = typeof taskFields;

/** What a person reads about each field in the admin shell (the descriptions above are the API's). */
export const taskFieldText: FieldTexts<keyof TaskFields & string> = {
  title: {
    label: 'Title',
    hint: 'One line that says what needs doing, up to 200 characters.',
    messages: { pattern: 'Keep the title on one line.' },
  },
  description: { label: 'Description', hint: 'Details for whoever does the task. You can use Markdown.' },
  status: {
    label: 'Status',
    hint: 'A new task is open. It moves on to acknowledged, in progress, resolved and closed; a resolved task can be reopened.',
  },
  priority: { label: 'Priority', hint: 'How urgent the task is, from low to critical.' },
  deadline: {
    label: 'Due',
    hint: 'When the task must be done. If it passes before the task is resolved, the task is recorded as having missed it, for good.',
  },
  assigneeId: {
    label: 'Assigned to',
    hint: 'The person doing the task. Use the Assign button to choose them.',
    messages: { format: 'Choose a person.', required: 'Choose a person.', reference: 'Choose a person.' },
  },
  slaBreached: {
    // Not "Overdue": lists flag a task overdue while it is (admin.overdue); this records a deadline missed for good.
    label: 'Missed its due date',
    hint: 'Yes once the due date passed before the task was resolved. It stays, even if the date is moved later.',
  },
  resolvedAt: { label: 'Resolved', hint: 'When the task was resolved.' },
  resolution: { label: 'Resolution', hint: 'What was done to resolve the task.' },
};
