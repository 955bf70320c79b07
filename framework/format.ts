/**
 * Values as people read them, one way each, wherever they read them: the admin shell's pages, the
 * mails and the notifications' texts. Instants in words with their zone (the service's clock is
 * UTC, and a mail is read far from the page that caused it), sizes in kB/MB, amounts in their
 * currency. The API keeps ISO 8601 and minor units; these are for people only.
 */

const DATE_TIME = new Intl.DateTimeFormat('en-GB', {
  day: 'numeric',
  month: 'short',
  year: 'numeric',
  hour: '2-digit',
  minute: '2-digit',
  hourCycle: 'h23',
  timeZone: 'UTC',
});

const asDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));

/**
 * An instant as people read it, with its zone: "27 Nov 2026, 08:26 UTC". The one form of a date
 * in the shell, in a mail and in a notification's text; a page wraps it in `<time datetime>`
 * (templates/admin/components/time.eta) with isoDate for machines.
 */
export function formatDateTime(value: Date | string): string {
  const parts = Object.fromEntries(DATE_TIME.formatToParts(asDate(value)).map((p) => [p.type, p.value]));
  return `${parts.day} ${parts.month} ${parts.year}, ${parts.hour}:${parts.minute} UTC`;
}

/** The machine-readable form for <time datetime>. */
export const isoDate = (value: Date | string): string => asDate(value).toISOString();

/** A date-time value as a page's `<time>` takes it (templates/admin/components/time.eta): the words and the ISO form. */
export interface When {
  text: string;
  iso: string;
}

/** The words and the ISO form of an instant, for templates/admin/components/time.eta. */
export const when = (value: Date | string): When => ({ text: formatDateTime(value), iso: isoDate(value) });

/** Is this an instant (a Date, or ISO 8601 text as the API answers one)? Dates in rows come either way. */
export function isInstant(value: unknown): value is Date | string {
  if (value instanceof Date) return !Number.isNaN(value.getTime());
  return typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(value);
}

const UNITS = ['bytes', 'kB', 'MB', 'GB', 'TB'];

/** 1 234 567 → "1.2 MB" (powers of 1000, as file managers show them); under 1000: "812 bytes". */
export function formatBytes(size: number): string {
  if (size < 1000) return size === 1 ? '1 byte' : `${size} bytes`;
  let value = size;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${value >= 100 ? Math.round(value) : value.toFixed(1)} ${UNITS[unit]}`;
}

const MONEY = new Map<string, Intl.NumberFormat>();

/**
 * An amount in the currency's minor unit (cents, yen) as people read it: 1999 EUR → "€19.99",
 * 900 JPY → "¥900" (the yen has no minor unit). The one form of an amount: the generated pages
 * (every Money field, framework/entity/money.ts), the subscription page and anything else that shows a price.
 */
export function formatMoney(minor: number, currency: string): string {
  let format = MONEY.get(currency);
  if (!format) {
    format = new Intl.NumberFormat('en-GB', { style: 'currency', currency });
    MONEY.set(currency, format);
  }
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(minor / 10 ** digits);
}
