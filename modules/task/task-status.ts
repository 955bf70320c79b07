export const TASK_STATUSES = ['open', 'acknowledged', 'in_progress', 'resolved', 'closed'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Statuses whose deadline no longer counts: a breach is not marked on them. */
export const FINISHED: readonly TaskStatus[] = ['resolved', 'closed'];

/** Where assign may start: a resolved or closed task is finished, so it takes no assignee. */
export const ASSIGNABLE: readonly TaskStatus[] = ['open', 'acknowledged', 'in_progress'];

/** Where unassign acts: a task with an assignee that is not finished (an open task has none). */
export const UNASSIGNABLE: readonly TaskStatus[] = ['acknowledged', 'in_progress'];

/** Where resolve may start. */
export const RESOLVABLE: readonly TaskStatus[] = ['open', 'acknowledged', 'in_progress'];

/**
 * The status graph: open → acknowledged → in_progress → resolved → closed; resolved → in_progress
 * (reopen); acknowledged or in_progress → open when unassigned (the unassign command takes it).
 * Moves into resolved belong to the resolve command; every other edge a PATCH may take.
 */
const EDGES: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  open: ['acknowledged'],
  acknowledged: ['in_progress', 'open'],
  in_progress: ['resolved', 'open'],
  resolved: ['closed', 'in_progress'],
  closed: [],
};

/** The graph as one sentence, for OpenAPI and the refusals. */
export const STATUS_GRAPH =
  'Status graph: open → acknowledged → in_progress → resolved → closed; resolved → in_progress (reopen); acknowledged or in_progress → open when the task has no assignee (POST .../{id}/unassign takes the assignee off and moves it there). A PATCH may take these edges except into resolved (the resolve command) and except into acknowledged or in_progress while nobody is assigned; any other move is 409 INVALID_TRANSITION.';

/** Why a PATCH may not move a task from one status to another (they differ), or undefined when it may. */
function moveRefusal(from: TaskStatus, to: TaskStatus, assigneeId: string | null): string | undefined {
  if (!EDGES[from].includes(to)) return `a task cannot move from ${from} to ${to}`;
  if (to === 'resolved') return 'only POST .../{id}/resolve moves a task to resolved';
  if ((to === 'acknowledged' || to === 'in_progress') && assigneeId === null)
    return `a task with no assignee cannot move to ${to}: assign it first`;
  if (to === 'open' && assigneeId !== null)
    return 'an assigned task does not go back to open: unassign it (POST .../{id}/unassign)';
  return undefined;
}

/**
 * The statuses a PATCH may move this task to: the entity's declared `states.patchMoves`, which
 * the framework holds every PATCH to (409 INVALID_TRANSITION otherwise) and the admin shell's edit
 * form offers.
 */
export const patchMoves = (from: TaskStatus, assigneeId: string | null): TaskStatus[] =>
  TASK_STATUSES.filter((to) => to !== from && moveRefusal(from, to, assigneeId) === undefined);

/** True when the deadline has passed at `now` for a task that is still to be done and not yet marked. */
export function breachDue(row: { deadline: Date; status: string | null; slaBreached: boolean }, now: Date): boolean {
  return !row.slaBreached && !FINISHED.includes(row.status as TaskStatus) && row.deadline.getTime() <= now.getTime();
}
