import { eventCatalog, registerAdminPage, renderTemplate, type AdminSite } from '../../framework/admin/index.ts';
import { deliveryLogPage, DeliveryListQuery } from './delivery-log.ts';
import { when } from '../../framework/format.ts';
import { TEST_EVENT_TYPE } from './webhook-events.ts';
import './webhook-tables.ts';

/** What a person reads for each status: words, not codes. */
const RESULTS: Record<string, string> = {
  succeeded: 'Delivered',
  failed: 'Failed, will be tried again',
  refused: 'Not sent: address not allowed',
  dead: 'Failed, no more tries',
};

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
  registerAdminPage(site, {
    path: '/admin/webhook/deliveries',
    access: { permission: 'webhook:manage' },
    summary: 'Webhook delivery log',
    schema: { querystring: DeliveryListQuery },
    handler: async (page) => {
      const log = await deliveryLogPage(page.tx, page.query);
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
      // The next page keeps the query's filters and sort: its cursor is good only with them.
      const next = new URLSearchParams();
      for (const [name, value] of Object.entries(page.query))
        if (name !== 'after' && name !== 'offset' && value !== undefined)
          for (const one of [value].flat()) next.append(name, String(one));
      const nextHref = log.next ? `/admin/webhook/deliveries?${next}&after=${encodeURIComponent(log.next)}` : null;
      const body = renderTemplate('./admin/pages/webhook-deliveries', { page: log, rows, csrf: page.csrf(), nextHref });
      return page.render({ title: 'Webhook deliveries', body });
    },
  });
}
