import Type, { type TInteger, type TNumberOptions, type TSchema, type TString, type TStringOptions } from 'typebox';
import { Format } from 'typebox/format';

/**
 * The Money field kind: an amount as a whole number of the currency's minor unit (cents for EUR,
 * yen for JPY, fils for BHD), beside a field of the same entity holding the currency's ISO 4217
 * code. So 1999 with EUR is €19.99.
 *
 * Why minor units and a declared currency field, not a decimal nor a code inside the value: an
 * integer is exact (no 0.1 + 0.2), stored as an integer column (`integer`, or `bigint` past ±2^31),
 * compared, sorted, summed and indexed as one; the query language's comparison operators and a
 * summary's sum take it as they take any integer. A value `{ amount, currency }` would be a JSON
 * column nothing can index or sum, and an amount in text would be parsed everywhere. The currency
 * is usually one per row (a plan's price, an order's lines), so one currency field serves every
 * amount of the row, and an existing integer field with a currency beside it becomes Money with
 * no change on the wire.
 *
 * Recognisable from its schema alone (OpenAPI, the catalog, a sample derived for a test):
 * `format: 'money'` on the integer and `x-currency-field` naming the field that holds the
 * currency, whose schema has `format: 'iso4217'`.
 */

/** The format of a Money field's schema (an integer of minor units). */
export const MONEY_FORMAT = 'money';
/** The keyword naming the field that holds a Money field's currency. */
export const CURRENCY_FIELD_KEYWORD = 'x-currency-field';
/** The format of a currency field's schema: an ISO 4217 code of a currency in use. */
export const CURRENCY_FORMAT = 'iso4217';

/**
 * ISO 4217 codes of the currencies in current use that the ICU data shipped with Node knows
 * (`Intl.supportedValuesOf('currency')`). Funds, precious metals and test codes (XAU, XTS, CLF...)
 * are not on it: nobody prices anything in them. Read once at load.
 */
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

export const isCurrency = (code: string): boolean => CURRENCIES.has(code);

// The validators (requests, code-made values) check the format through TypeBox's format registry.
Format.Set(CURRENCY_FORMAT, isCurrency);

export interface TMoney extends TInteger {
  format: typeof MONEY_FORMAT;
  [CURRENCY_FIELD_KEYWORD]: string;
}

export interface MoneyOptions extends Omit<TNumberOptions, 'format' | 'minimum' | 'maximum'> {
  /** The entity's field holding the ISO 4217 code of the amount's currency (declared with Currency()). */
  currency: string;
  /** The least amount, in minor units: 0 unless given (a price); give a negative one for a balance. */
  minimum?: number;
  /** The most, in minor units: 2147483647 (an integer column) unless given; up to 9007199254740991 (a bigint). */
  maximum?: number;
}

/**
 * Declares a Money field: an integer of the currency's minor unit, the currency in `currency`.
 * Its OpenAPI schema states the unit, the currency field and an example.
 */
export function Money(options: MoneyOptions): TMoney {
  const { currency, description, ...rest } = options;
  const minimum = options.minimum ?? 0;
  const maximum = options.maximum ?? 2147483647;
  const unit = `An amount in the minor unit of the currency in \`${currency}\` (ISO 4217): cents for EUR, yen for JPY, so 1999 with EUR is €19.99.`;
  return Type.Integer({
    ...rest,
    minimum,
    maximum,
    format: MONEY_FORMAT,
    [CURRENCY_FIELD_KEYWORD]: currency,
    description: description ? `${description} ${unit}` : unit,
    examples: rest.examples ?? [Math.min(Math.max(1999, minimum), maximum)],
  }) as TMoney;
}

export interface TCurrency extends TString {
  format: typeof CURRENCY_FORMAT;
}

/** Declares a currency field: the ISO 4217 code of a currency in current use (EUR, USD, JPY). */
export function Currency(options: Omit<TStringOptions, 'format' | 'pattern'> = {}): TCurrency {
  const { description, ...rest } = options;
  const code =
    'An ISO 4217 code of a currency in current use (the list shipped with the ICU data); funds, metals and test codes are refused.';
  return Type.String({
    ...rest,
    pattern: '^[A-Z]{3}$',
    format: CURRENCY_FORMAT,
    examples: rest.examples ?? ['EUR', 'USD', 'JPY'],
    description: description ? `${description} ${code}` : code,
  }) as TCurrency;
}

type Node = { format?: unknown; anyOf?: Node[]; [CURRENCY_FIELD_KEYWORD]?: unknown };

/** The schema without an optional marker or a null branch. */
function bare(schema: TSchema): Node {
  const node = schema as Node;
  if (node.anyOf) {
    const rest = node.anyOf.filter((b) => (b as { type?: unknown }).type !== 'null');
    if (rest.length === 1) return rest[0]!;
  }
  return node;
}

/** The currency field of a Money field's schema, or undefined for any other schema. */
export function currencyFieldOf(schema: TSchema | undefined): string | undefined {
  if (!schema) return undefined;
  const node = bare(schema);
  return node.format === MONEY_FORMAT && typeof node[CURRENCY_FIELD_KEYWORD] === 'string'
    ? node[CURRENCY_FIELD_KEYWORD]
    : undefined;
}

/** Whether the schema is a currency field's (Currency()). */
export const isCurrencySchema = (schema: TSchema | undefined): boolean =>
  schema !== undefined && bare(schema).format === CURRENCY_FORMAT;

/** An entity's Money fields, each with its currency field: `{ price: 'currency' }`. */
export function moneyFields(fields: Readonly<Record<string, TSchema>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(fields).flatMap(([name, schema]) => {
      const currency = currencyFieldOf(schema);
      return currency ? [[name, currency]] : [];
    }),
  );
}
