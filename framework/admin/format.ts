/**
 * Values as the hand-written pages show them to people: dates in words, sizes in kB/MB, prices in
 * their currency. The shell's pages are in English and show times in UTC (the service's clock).
 */

const DATE = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeZone: 'UTC' });
const DATE_TIME = new Intl.DateTimeFormat('en-GB', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

const asDate = (value: Date | string): Date => (value instanceof Date ? value : new Date(value));

/** "25 Nov 2026". */
export const formatDate = (value: Date | string): string => DATE.format(asDate(value));

/** "25 Nov 2026, 14:05 UTC". */
export const formatDateTime = (value: Date | string): string => `${DATE_TIME.format(asDate(value))} UTC`;

/** The machine-readable form for <time datetime>. */
export const isoDate = (value: Date | string): string => asDate(value).toISOString();

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

/** An amount in the currency's minor unit (cents, yen) as people read it: 1999 EUR → "€19.99". */
export function formatMoney(minor: number, currency: string): string {
  const format = new Intl.NumberFormat('en-GB', { style: 'currency', currency });
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(minor / 10 ** digits);
}
