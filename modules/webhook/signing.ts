import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** Standard Webhooks secrets: `whsec_` and the base64 of 32 random bytes (the HMAC key). */
export const SECRET_PREFIX = 'whsec_';

export function generateSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** One signature, `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`. */
export function signature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The Webhook-Signature header: one signature per secret, space-separated (both while a rotation overlaps). */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  return secrets.map((s) => signature(s, id, timestamp, body)).join(' ');
}

/**
 * The receiver's check (docs/webhooks.md): the timestamp within `toleranceSeconds` of the
 * receiver's `nowSeconds` (its own clock, passed in), and one of the header's v1 signatures equal to
 * the one computed with the secret (compared in constant time).
 */
export function verifySignature(
  secret: string,
  headers: { id: string; timestamp: string; signature: string },
  body: string,
  nowSeconds: number,
  toleranceSeconds = 300,
): boolean {
  const timestamp = Number(headers.timestamp);
  if (!Number.isInteger(timestamp) || Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signature(secret, headers.id, timestamp, body).slice(3), 'base64');
  return headers.signature.split(' ').some((part) => {
    const [version, value] = part.split(',');
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
