import { createHmac, timingSafeEqual } from 'node:crypto';
import type { SignedLinks } from '../contracts/access.ts';

/**
 * Links that open without a session until they expire (a tenant's export archive): the URL
 * carries its expiry and an HMAC-SHA256 over what it opens, for which tenant and until when, keyed
 * by a key of the installation's secret (access/installation-secret.ts). Nothing is stored: a link
 * is good wherever its signature is, and not after its expiry, nor for anything else.
 */
export class LinkSeal implements SignedLinks {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    this.key = key;
  }

  /** The signature of a link to `what` (e.g. tenant-export:<tenant>:<id>) until `expires` (Unix seconds). */
  sign(what: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${what}\n${expires}`).digest('base64url');
  }

  /** Whether the signature is this seal's for `what` until `expires`, and `expires` is not past `now`. */
  opens(what: string, expires: number, signature: string, now: Date): boolean {
    if (!Number.isSafeInteger(expires) || expires * 1000 <= now.getTime()) return false;
    const expected = Buffer.from(this.sign(what, expires));
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
