import { problem } from '../errors.ts';

/**
 * Event payloads travel to queues, logs and the audit trail, so personal data and secrets never
 * go in them: no address, message body, link or token. Identifiers and field names are fine.
 */
const FORBIDDEN_KEY =
  /^(e-?mail|emails?|address|addresses|body|message|text|html|link|links|url|href|uri|token|secret|password|password_?hash|credentials?)$/i;

export function assertSafePayload(eventName: string, payload: unknown, path = ''): void {
  if (payload === null || typeof payload !== 'object') return;
  for (const [key, value] of Object.entries(payload)) {
    if (FORBIDDEN_KEY.test(key) || /token|password|secret/i.test(key)) {
      throw problem(
        'INTERNAL',
        `event ${eventName} may not carry "${path}${key}": no address, body, link or token travels in an event`,
      );
    }
    assertSafePayload(eventName, value, `${path}${key}.`);
  }
}
