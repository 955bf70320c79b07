import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { problem } from '../errors.ts';
import { TOTAL_CAP } from './page-query.ts';
import type { Cursor, CursorScope, ListCursors } from '../contracts/cursor.ts';

export type { Cursor, CursorScope, ListCursors } from '../contracts/cursor.ts';

/**
 * The `after` cursor of keyset paging: opaque to clients, and signed, so a list answers only the
 * cursors it gave. The signature (an HMAC-SHA256 keyed by the installation's secret,
 * access/installation-secret.ts) covers the cursor and where it was given: the list, the tenant
 * and the list's filters. Anything else — an edited count, another list's cursor, another
 * tenant's, one given with other filters, an unsigned cursor of an earlier release, garbage — is
 * 422 VALIDATION_FAILED (pointer /querystring/after), before any SQL runs.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The largest count a cursor can carry: the cap plus the one row that says the count was stopped. */
const CARRIED_TOTAL_MAX = TOTAL_CAP + 1;

/** Bytes of the HMAC a cursor carries: 128 bits, short enough for a URL, far past guessing. */
const MAC_BYTES = 16;

/** Bumped if the signed text's layout ever changes, so a cursor of one layout never opens under another. */
const LAYOUT = 'tenantry-cursor-1';

const isCarriedTotal = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= CARRIED_TOTAL_MAX;

const isSortValue = (value: unknown): value is Cursor['value'] =>
  typeof value === 'string' ||
  value === null ||
  (Array.isArray(value) && value.length > 1 && value.every((v) => typeof v === 'string' || v === null));

export const badCursor = (detail: string) =>
  problem('VALIDATION_FAILED', detail, { errors: [{ pointer: '/querystring/after', message: detail }] });

const NOT_GIVEN = 'after is not a cursor this list gave';

/**
 * Seals and opens cursors with the installation's cursor key. A cursor is the base64url of its
 * JSON payload ([sort, value, id, total]) followed by the HMAC of the scope and that payload: only
 * URL characters, as the `after` parameter's pattern wants. The key is a KeyObject, which neither
 * util.inspect nor JSON shows, so no log line can carry it.
 */
export class CursorSeal implements ListCursors {
  readonly #key: KeyObject;

  constructor(key: Buffer) {
    if (key.length < 32) throw new Error('a cursor key has at least 32 bytes');
    this.#key = createSecretKey(key);
  }

  seal(cursor: Cursor, scope: CursorScope): string {
    const payload = Buffer.from(JSON.stringify([cursor.sort, cursor.value, cursor.id, cursor.total]), 'utf8');
    return Buffer.concat([payload, this.mac(scope, payload)]).toString('base64url');
  }

  /** The cursor `after` carries, for this scope and sort; 422 VALIDATION_FAILED for anything this list did not give. */
  open(after: string, scope: CursorScope, sort: string, idType: 'uuid' | 'text' = 'uuid'): Cursor {
    const bytes = Buffer.from(after, 'base64url');
    if (bytes.length <= MAC_BYTES) throw badCursor(NOT_GIVEN);
    const payload = bytes.subarray(0, bytes.length - MAC_BYTES);
    if (!timingSafeEqual(bytes.subarray(bytes.length - MAC_BYTES), this.mac(scope, payload)))
      throw badCursor(NOT_GIVEN);
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload.toString('utf8'));
    } catch {
      throw badCursor(NOT_GIVEN);
    }
    // Signed by this installation, so well formed; checked all the same, as a second line.
    if (
      !Array.isArray(parsed) ||
      parsed.length !== 4 ||
      typeof parsed[0] !== 'string' ||
      !isSortValue(parsed[1]) ||
      typeof parsed[2] !== 'string' ||
      (idType === 'uuid' && !UUID.test(parsed[2])) ||
      !isCarriedTotal(parsed[3])
    ) {
      throw badCursor(NOT_GIVEN);
    }
    if (parsed[0] !== sort)
      throw badCursor(`after was given for sort=${parsed[0]}; send the same sort, or start again without after`);
    return { sort, value: parsed[1] as Cursor['value'], id: parsed[2], total: parsed[3] };
  }

  private mac(scope: CursorScope, payload: Buffer): Buffer {
    // Every part but the last is a digest, a uuid or JSON text, none holding a NUL: the separators
    // keep one part from running into the next.
    return createHmac('sha256', this.#key)
      .update(`${LAYOUT}\u0000${scope.list}\u0000${scope.tenantId}\u0000${scope.filters}\u0000`)
      .update(payload)
      .digest()
      .subarray(0, MAC_BYTES);
  }
}
