import type { Generated } from 'kysely';
import type { EntityTable } from '../../framework/db/entity-table.ts';
import type { EndpointFields } from './endpoint.fields.ts';
import { declareExportExclusions } from '../../framework/bulk/tenant-export/exclusions.ts';

/**
 * webhook_endpoints (migrations/webhook): the fields, and the signing secrets no response carries
 * (the current one, and the one it replaced while the rotation's overlap lasts).
 */
export type WebhookEndpointsTable = EntityTable<EndpointFields> & {
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: Date | null;
  /** The first failed attempt since the last success: 3 days of failures turn the endpoint inactive. */
  failing_since: Date | null;
};

/** One attempt of one delivery (the delivery log), kept 30 days. */
export interface WebhookDeliveriesTable {
  id: Generated<string>;
  tenant_id: Generated<string>;
  endpoint_id: string;
  /** The Webhook-Id: the event id (a test event's own id). */
  message_id: string;
  event_type: string;
  message_created_at: Date;
  /** The event payload sent as `data`, kept for "send again". */
  data: unknown;
  attempt: number;
  status: 'succeeded' | 'failed' | 'refused' | 'dead';
  http_status: number | null;
  duration_ms: number;
  error: string | null;
  created_at: Generated<Date>;
}

declare module '../../framework/contracts/database.ts' {
  interface Database {
    webhook_endpoints: WebhookEndpointsTable;
    webhook_deliveries: WebhookDeliveriesTable;
  }
}

// The export leaves the signing secrets out (framework/bulk/tenant-export/).
declareExportExclusions({
  webhook_endpoints: {
    columns: ['secret', 'previous_secret'],
    reason: 'a signing secret is shown once and never leaves',
  },
});
