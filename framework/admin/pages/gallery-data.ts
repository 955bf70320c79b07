import { when } from '../../format.ts';

/** A sample due date, as the table and the values show one. */
const DUE = when('2026-12-01T09:00:00Z');

/**
 * One sample per UI component of templates/admin/components/, for /admin/_gallery. Each entry
 * names its partial and the data it is rendered with; `csrf` stands for the page's real token.
 * A partial without an entry here fails test/admin/pages-gallery.test.ts.
 */
export interface GallerySample {
  component: string;
  /** What the component is for, shown above it. */
  about: string;
  data: (page: { csrf: string; csrfField: string }) => object;
  /** Markup the partial only makes sense inside (option elements live in a select). */
  wrap?: (html: string) => string;
}

export const GALLERY: readonly GallerySample[] = [
  {
    component: 'alert',
    about: 'A message: error (its sentence and the points it lists; the problem code only in data-code), ok or info.',
    data: () => ({
      kind: 'error',
      title: 'The task was not saved',
      code: 'VALIDATION_FAILED',
      items: ['Fill in the title.'],
    }),
  },
  {
    component: 'badge',
    about: 'A count, as the header shows the unread notifications.',
    data: () => ({ count: 3, label: 'unread notifications' }),
  },
  {
    component: 'button',
    about: 'A link or a submit button; primary, quiet or danger.',
    data: () => ({ label: 'New task', href: '/admin/_gallery#button' }),
  },
  {
    component: 'confirm',
    about: 'A confirmation that works without JavaScript: the page is the question, the button posts it.',
    data: ({ csrf, csrfField }) => ({
      action: '/admin/_gallery',
      csrfField,
      csrf,
      question: 'Delete the task “Call the customer back”?',
      confirmLabel: 'Delete',
      cancelHref: '/admin/_gallery',
    }),
  },
  {
    component: 'download-csv',
    about: 'A list’s export for the page’s filters: every matching row as CSV, not the page.',
    data: () => ({ href: '/admin/_gallery#download-csv' }),
  },
  {
    component: 'field',
    about: 'A form field with its label, hint and an inline error tied to it by aria-describedby.',
    data: () => ({
      id: 'gallery-title',
      name: 'title',
      label: 'Title',
      kind: 'text',
      value: '',
      required: true,
      hint: 'One line, 1 to 200 characters.',
      error: 'Use 1 to 200 characters.',
      maxlength: 200,
    }),
  },
  {
    component: 'header-badge',
    about:
      'The header’s count worth opening (the unread notifications), a link to them; hidden at zero, counted again by live changes where a page follows them.',
    data: () => ({
      label: 'unread notifications',
      count: 3,
      href: '/admin/_gallery#header-badge',
      follows: undefined,
      refresh: '/admin/_live/badge',
    }),
  },
  {
    component: 'history',
    about:
      'A record’s changes, newest first: who, what and when in words, a long text’s change as the lines removed and added, and Restore behind a confirmation.',
    data: ({ csrf, csrfField }) => ({
      heading: 'History',
      csrfVals: JSON.stringify({ [csrfField]: csrf }),
      revisions: [
        {
          who: { text: 'Ada Lovelace' },
          what: 'changed it',
          when: { text: '2 Dec 2026, 10:15 UTC', iso: '2026-12-02T10:15:00.000Z' },
          changes: [
            { text: 'Due moved from 1 Dec 2026, 09:00 UTC to 5 Dec 2026, 09:00 UTC' },
            {
              text: 'Description changed:',
              diff: [
                { kind: 'same', text: '1. Order it' },
                { kind: 'removed', text: '2. Install it' },
                { kind: 'added', text: '2. Install it on both hosts' },
              ],
            },
          ],
        },
        {
          who: { text: 'Ada Lovelace' },
          what: 'created it',
          when: { text: '1 Dec 2026, 08:00 UTC', iso: '2026-12-01T08:00:00.000Z' },
          changes: [{ text: 'Title: Renew the certificate' }],
          restore: {
            href: '/admin/_gallery#history',
            post: '/admin/_gallery',
            confirm: 'Restore this task as it was after the change of 1 Dec 2026, 08:00 UTC?',
          },
        },
      ],
      more: null,
    }),
  },
  {
    component: 'markdown-body',
    about:
      'A Markdown field rendered and sanitised, as detail pages and the preview show it; a heading sits under the page’s own.',
    data: () => ({ html: '<h3>Opening hours</h3><p>We are <strong>open</strong> from nine to five.</p>' }),
  },
  {
    component: 'markdown-preview',
    about:
      'Where a Markdown field’s preview appears under the form: filled when the Preview button posted the form back (with htmx or without JavaScript).',
    data: () => ({ id: 'gallery-body', html: '<p>A <em>preview</em> of the text.</p>' }),
  },
  {
    component: 'secret',
    about:
      'A secret shown once, on the page answering the form that made it (an access token, a signing secret): nothing shows it again.',
    data: () => ({
      id: 'gallery-secret',
      heading: 'Signing secret',
      notice: 'Copy the signing secret now: it will not be shown again.',
      label: 'Signing secret',
      value: 'whsec_c2FtcGxlIHNlY3JldCBmb3IgdGhlIGdhbGxlcnk=',
      hint: 'Shown once, when it is made: copy it to the receiving system.',
    }),
  },
  {
    component: 'options',
    about: 'A picker’s choices, by title; the type-ahead swaps them into the select as one types.',
    data: () => ({
      placeholder: 'Choose one',
      options: [
        { value: 'a', label: 'Ada Lovelace' },
        { value: 'b', label: 'Grace Hopper' },
      ],
      value: 'b',
    }),
    wrap: (html) => `<label for="gallery-options">Assigned to</label>\n<select id="gallery-options">${html}</select>`,
  },
  {
    component: 'picker',
    about:
      'A field naming another record, chosen by its title; past fifty rows a search box narrows the choices (as one types with htmx, by a Search button without).',
    data: () => ({
      id: 'gallery-assignee',
      name: 'assigneeId',
      label: 'Assigned to',
      required: true,
      value: '',
      hint: 'Choose a person.',
      picker: {
        options: [
          { value: 'a', label: 'Ada Lovelace' },
          { value: 'b', label: 'Grace Hopper' },
        ],
        search: { q: '', label: 'Find a person' },
      },
    }),
  },
  {
    component: 'filters',
    about:
      'A list’s search and filter controls: a plain GET form whose choices are the list API’s parameters; ready-made filters as links; conditions no control shows kept as ticked boxes.',
    data: () => ({
      action: '/admin/_gallery',
      label: 'Search and filter tasks',
      search: { label: 'Search tasks', q: '' },
      controls: [
        {
          kind: 'select',
          id: 'gallery-filter-status',
          name: 'status',
          label: 'Status',
          options: [
            { value: '', label: 'Any', selected: false },
            { value: 'eq.open', label: 'Open', selected: true },
            { value: 'eq.resolved', label: 'Resolved', selected: false },
          ],
        },
        {
          kind: 'range',
          id: 'gallery-filter-deadline',
          label: 'Due',
          input: 'datetime-local',
          from: { id: 'gallery-filter-deadline-from', name: 'deadline-from', value: '2026-12-01T09:00' },
          to: { id: 'gallery-filter-deadline-to', name: 'deadline-to', value: '' },
        },
      ],
      kept: [{ id: 'gallery-filter-kept-1', name: 'priority', value: 'gte.high', label: 'Priority: at least High' }],
      presets: [{ label: 'Overdue and not resolved', href: '/admin/_gallery#filters', current: false }],
      hidden: [],
      filtered: true,
    }),
  },
  {
    component: 'pager',
    about: 'Previous and next pages of a list; with htmx the rows swap in place.',
    data: () => ({
      summary: 'Tasks 21–40 of 57',
      prev: { href: '/admin/_gallery#pager' },
      next: { href: '/admin/_gallery#pager' },
    }),
  },
  {
    component: 'table',
    about: 'A list’s table: sortable column headings, a link per row.',
    data: () => ({
      id: 'gallery-table',
      caption: 'Tasks (a sample)',
      columns: [
        { label: 'Title', sortHref: '/admin/_gallery#table', sorted: 'ascending' },
        { label: 'Priority' },
        { label: 'Deadline' },
      ],
      rows: [
        {
          overdue: true,
          cells: [
            { text: 'Call the customer back', href: '/admin/_gallery#table', title: true },
            { text: 'High' },
            { ...DUE, flag: 'Overdue' },
          ],
        },
        {
          cells: [
            { text: 'Renew the certificate', href: '/admin/_gallery#table', title: true },
            { text: 'Critical' },
            when('2026-12-03T17:00:00Z'),
          ],
        },
      ],
      empty: 'No tasks yet.',
    }),
  },
  {
    component: 'time',
    about: 'A date as every page, mail and notification says it, in a <time> that gives it to machines.',
    data: () => when('2026-11-27T08:26:51.934Z'),
  },
  {
    component: 'usage-bars',
    about:
      'The plan’s limits on the subscription page: the use of each bounded one, with a bar, and what to do at the bound.',
    data: () => ({
      bars: [
        { name: 'user.seats', text: '3 of 5 seats', use: 3, max: 5, full: false },
        { name: 'webhook.endpoints', text: '2 of 2 endpoints', use: 2, max: 2, full: true },
        { name: 'token.active', text: '4 tokens, no limit', use: 4, max: null, full: false },
      ],
    }),
  },
  {
    component: 'value',
    about: 'A read-only field in a form (command-owned or immutable): shown, never posted.',
    data: () => ({ label: 'Status', value: 'open', hint: 'Changed by the task’s commands.' }),
  },
  {
    component: 'values',
    about: 'A record’s fields, as the detail page lists them.',
    data: () => ({
      items: [
        { label: 'Title', value: 'Call the customer back' },
        { label: 'Priority', value: 'High' },
        { label: 'Due', value: DUE.text, iso: DUE.iso },
        { label: 'Assignee', value: '' },
      ],
    }),
  },
];
