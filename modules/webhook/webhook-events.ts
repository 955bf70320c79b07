/** An endpoint's events entry for every event. */
export const ALL_EVENTS = '*';
/** Published by send-test-event; the fan-out subscription turns it into one test delivery, never forwards it. */
export const TEST_REQUESTED = 'webhook.test_requested';
/** Published by send-again; the fan-out subscription queues the logged message again, never forwards it. */
export const REDELIVERY_REQUESTED = 'webhook.redelivery_requested';
/** The type of the message send-test-event delivers. */
export const TEST_EVENT_TYPE = 'webhook.test';
/** The module's queue of deliveries (one job per endpoint per message). */
export const DELIVERY_QUEUE = 'webhook-delivery';
/** Published by rotate-secret (the id only; never a secret). */
export const SECRET_ROTATED = 'webhook.endpoint.secret_rotated';
