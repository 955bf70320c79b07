import type { FieldKind, FieldType } from './field-types.ts';

/**
 * Reading one value of a filter as its field's type, from the text a query string carries: the
 * value the compiler sends as a parameter, or a refusal saying what would have been accepted.
 */

/** A value read as its field's type, ready to be sent as a parameter. */
export type FilterValue = string | number | boolean | Date;

export type Read = { ok: true; value: FilterValue } | { ok: false; expected: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INTEGER = /^-?\d{1,16}$/;
const NUMBER = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(:(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i;
const NOW = /^now(?:([+-])(\d{1,6})([mhd]))?$/;

const MINUTE = 60_000;
const UNIT_MS: Record<string, number> = { m: MINUTE, h: 60 * MINUTE, d: 24 * 60 * MINUTE };

export const DATE_TIME_EXPECTED =
  'a date-time: ISO 8601 with a time zone (2024-05-01T09:00:00Z, 2024-05-01T11:00:00+02:00), a date (2024-05-01, midnight UTC), or now with an optional offset in minutes, hours or days (now, now-7d, now+48h, now-30m)';

/** What a value of this kind must look like, for a refusal. */
export function expectedOf(type: FieldType, kind: Exclude<FieldKind, 'list'> = kindOf(type)): string {
  switch (kind) {
    case 'enum':
      return `one of ${(type.values ?? []).join(', ')}`;
    case 'uuid':
      return 'a UUID';
    case 'integer':
      return 'an integer';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'dateTime':
      return DATE_TIME_EXPECTED;
    case 'date':
      return 'a date (2024-05-01)';
    default:
      return 'text';
  }
}

const kindOf = (type: FieldType): Exclude<FieldKind, 'list'> => (type.kind === 'list' ? type.element! : type.kind);

function validDate(year: string, month: string, day: string): boolean {
  const m = Number(month);
  const d = Number(day);
  if (m < 1 || m > 12 || d < 1) return false;
  // Day 0 of the next month is the last day of this one.
  return d <= new Date(Date.UTC(Number(year), m, 0)).getUTCDate();
}

function readDateTime(text: string, now: Date): Read {
  // A `+` in a query string arrives as a space (form encoding): now+48h, 2024-05-01T11:00:00+02:00.
  const value = text.replaceAll(' ', '+');
  const relative = NOW.exec(value);
  if (relative) {
    const [, sign, amount, unit] = relative;
    const offset = sign ? (sign === '-' ? -1 : 1) * Number(amount) * UNIT_MS[unit!]! : 0;
    return { ok: true, value: new Date(now.getTime() + offset) };
  }
  const date = DATE.exec(value);
  if (date) {
    if (!validDate(date[1]!, date[2]!, date[3]!)) return { ok: false, expected: DATE_TIME_EXPECTED };
    return { ok: true, value: new Date(`${value}T00:00:00Z`) };
  }
  const time = DATE_TIME.exec(value);
  if (!time || !validDate(time[1]!, time[2]!, time[3]!) || Number(time[4]) > 23 || Number(time[5]) > 59) {
    return { ok: false, expected: DATE_TIME_EXPECTED };
  }
  const parsed = new Date(value);
  return Number.isNaN(parsed.getTime()) ? { ok: false, expected: DATE_TIME_EXPECTED } : { ok: true, value: parsed };
}

/** One value of the field's kind (a list's: of its element), read from the query's text. */
export function readValue(type: FieldType, text: string, now: Date): Read {
  const kind = kindOf(type);
  const refused = (): Read => ({ ok: false, expected: expectedOf(type, kind) });
  switch (kind) {
    case 'text':
      return { ok: true, value: text };
    case 'enum':
      return type.values?.includes(text) ? { ok: true, value: text } : refused();
    case 'uuid':
      return UUID.test(text) ? { ok: true, value: text.toLowerCase() } : refused();
    case 'integer': {
      if (!INTEGER.test(text)) return refused();
      const n = Number(text);
      return Number.isSafeInteger(n) ? { ok: true, value: n } : refused();
    }
    case 'number': {
      if (!NUMBER.test(text)) return refused();
      const n = Number(text);
      return Number.isFinite(n) ? { ok: true, value: n } : refused();
    }
    case 'boolean':
      return text === 'true' || text === 'false' ? { ok: true, value: text === 'true' } : refused();
    case 'date': {
      const date = DATE.exec(text);
      return date && validDate(date[1]!, date[2]!, date[3]!) ? { ok: true, value: text } : refused();
    }
    case 'dateTime':
      return readDateTime(text, now);
  }
}
