import { randomFillSync } from 'node:crypto';

/**
 * UUID version 7 (RFC 9562): 48 bits of Unix time in milliseconds, then random bits. Made in the
 * process, an id is known before its row is written, so a create can send its insert and its
 * event together. Time-ordered ids also keep a primary key's index appends local. Within one
 * millisecond the 12 bits after the version count up from a random start (RFC 9562 §6.2, method
 * 1), so ids made by this process sort in the order they were made; a clock that steps back
 * keeps the last time seen. The time is the caller's: the service's clock.
 */
let lastMs = -1;
let counter = 0;
// Random bytes for 256 ids at a time, as crypto.randomUUID batches its own: one randomFillSync
// per id was the largest single cost of making one.
const entropy = Buffer.alloc(16 * 256);
let used = entropy.length;

export function uuidv7(nowMs: number): string {
  if (used === entropy.length) {
    randomFillSync(entropy);
    used = 0;
  }
  const bytes = entropy.subarray(used, (used += 16));
  if (nowMs > lastMs) {
    lastMs = nowMs;
    // A random start in the lower half leaves room to count up within the millisecond.
    counter = bytes.readUInt16BE(6) & 0x7ff;
  } else if (++counter > 0xfff) {
    lastMs += 1;
    counter = 0;
  }
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (counter >> 8);
  bytes[7] = counter & 0xff;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
