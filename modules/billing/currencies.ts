/**
 * ISO 4217 codes a plan may be priced in: the currencies in current use that the ICU data shipped
 * with Node knows (`Intl.supportedValuesOf('currency')`). Funds, precious metals and test codes
 * (XAU, XTS, CLF...) are not on it: nobody is billed in them. Read once at load.
 */
const CURRENCIES: ReadonlySet<string> = new Set(Intl.supportedValuesOf('currency'));

export const isCurrency = (code: string): boolean => CURRENCIES.has(code);
