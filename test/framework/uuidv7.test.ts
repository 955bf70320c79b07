import { describe, expect, it } from 'vitest';
import { uuidv7 } from '../../framework/db/uuidv7.ts';

/** Rule: ids made in the process are RFC 9562 version 7 UUIDs, ordered by the time they were made. */

const VERSION_7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string): number => parseInt(id.replaceAll('-', '').slice(0, 12), 16);

describe('uuidv7', () => {
  it('carries version 7, the RFC variant and the Unix time in milliseconds in its first 48 bits', () => {
    const at = Date.UTC(2026, 10, 22, 19, 0, 0, 123) + 1_000_000;
    const id = uuidv7(at);
    expect(id).toMatch(VERSION_7);
    expect(timeOf(id)).toBe(at);
  });

  it('sorts in the order the ids were made, within one millisecond too', () => {
    const at = Date.now() + 10_000_000;
    const ids = Array.from({ length: 5000 }, (_, i) => uuidv7(at + Math.floor(i / 1000)));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(VERSION_7);
  });

  it('keeps its order when the clock steps back', () => {
    const at = Date.now() + 20_000_000;
    const before = uuidv7(at);
    const after = uuidv7(at - 5_000);
    expect(after > before).toBe(true);
    expect(timeOf(after)).toBeGreaterThanOrEqual(at);
  });
});
