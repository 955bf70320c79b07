import {
  cursorPager,
  entityPicker,
  FORM_TOKEN_FIELD,
  eventCatalog,
  ListFilters,
  registerAdminPage,
  renderTemplate,
  type AdminSite,
} from '../../framework/admin/index.ts';
import { deliveryList, deliveryLogPage, DeliveryListQuery } from './delivery-log.ts';
import { when } from '../../framework/format.ts';
import { titleCase } from '../../framework/entity/names.ts';
import { TEST_EVENT_TYPE } from './webhook-events.ts';
import './webhook-tables.ts';

/** What a person reads for each status: words, not codes. */
const RESULTS: Record<string, string> = {
  succeeded: 'Delivered',
  failed: 'Failed, will be tried again',
  refused: 'Not sent: address not allowed',
  dead: 'Failed, no more tries',
};

const DELIVERIES_PAGE = '/admin/webhook/deliveries';

/** The filtered fields as the table's columns name them. */
const FIELD_LABELS: Record<string, string> = { createdAt: 'Time', endpointId: 'Endpoint', status: 'Result' };

/** The sentence a log row's error becomes on the page (the API keeps the raw text). */
function why(status: string, error: string | null, httpStatus: number | null): string {
  if (status === 'succeeded' || !error) return '';
  if (status === 'refused') return error.replace(/^refused: /, '').replace(/ \(webhooks\.[a-z_]+ is off\)$/, '');
  if (httpStatus !== null && httpStatus >= 300 && httpStatus < 400)
    return 'The receiver redirected; redirects are not followed.';
  if (httpStatus !== null) return 'The receiver did not accept it.';
  return error;
}

/**
 * GET /admin/webhook/deliveries: the tenant's delivery log, paged like the API's list, each
 * attempt with a "Send again" form posting to the endpoint's generated send-again page.
 */
export function registerDeliveryLogPage(site: AdminSite): void {
  // An event by its words, as the endpoint's form names it ("Task created"): its name is for programs.
  const events = eventCatalog(site.services.registry);
  // The list's filters as the API's, over the log's own fields: when, which endpoint, which result.
  const endpointPicker = entityPicker(site.services, 'webhook.endpoint');
  const filters = new ListFilters({
    base: DELIVERIES_PAGE,
    model: deliveryList.model,
    fields: ['createdAt', 'endpointId', 'status'],
    labelOf: (field) => FIELD_LABELS[field] ?? titleCase(field),
    valueLabel: (field, value) => (field === 'status' ? (RESULTS[value] ?? value) : value),
    pickers: endpointPicker ? { endpointId: endpointPicker } : {},
    presets: [{ label: 'Failed deliveries', query: { status: 'in.(failed,dead)' } }],
    defaultSort: '-createdAt',
  });
  registerAdminPage(site, {
    path: DELIVERIES_PAGE,
    access: { permission: 'webhook:manage' },
    summary: 'Webhook delivery log',
    schema: { querystring: filters.pageQuery(DeliveryListQuery) },
    handler: async (page) => {
      const asked = filters.request(page);
      if (asked.changed) return page.redirect(asked.href);
      const log = await deliveryLogPage(page.tx, asked.query);
      const ids = [...new Set(log.items.map((d) => String(d.endpointId)))];
      const endpoints = ids.length
        ? await page.tx.db.selectFrom('webhook_endpoints').select(['id', 'url']).where('id', 'in', ids).execute()
        : [];
      const urlOf = new Map(endpoints.map((e) => [e.id, e.url]));
      const rows = log.items.map((d) => ({
        ...d,
        at: when(d.createdAt as string | Date),
        eventText:
          d.event === TEST_EVENT_TYPE
            ? 'Test event'
            : (events.get(String(d.event))?.label ?? 'An event no module declares any more'),
        endpoint: urlOf.get(String(d.endpointId)) ?? 'a deleted endpoint',
        result: RESULTS[String(d.status)] ?? String(d.status),
        answer: d.httpStatus ?? 'No answer',
        why: why(String(d.status), d.error as string | null, d.httpStatus as number | null),
      }));
      const form = await filters.form(page, asked.pairs, { label: 'Filter the deliveries' });
      const body = renderTemplate('./admin/pages/webhook-deliveries', {
        page: log,
        rows,
        csrf: page.csrf(),
        csrfField: FORM_TOKEN_FIELD,
        // The next page keeps the query's filters and sort: its cursor is good only with them.
        pager: cursorPager(asked.nextHref(log.next)),
        filters: form,
      });
      return page.render({ title: 'Webhook deliveries', body });
    },
  });
}
