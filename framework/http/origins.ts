/**
 * Web origins as the CORS settings list them (server.cors_origins, a tenant's own list):
 * http/cors.ts answers the pages they serve.
 */

/** The most origins a tenant may list (the column's check says the same). */
export const CORS_ORIGINS_MAX = 50;

/**
 * An origin as a browser sends it in the Origin header: `scheme://host[:port]`, http or https,
 * lower-case, the scheme's default port left out. Undefined for anything else: a path, a query, a
 * fragment, credentials, a wildcard, another scheme.
 */
export function normaliseOrigin(value: string): string | undefined {
  const text = value.trim();
  if (!/^https?:\/\/[^/?#@\s]+\/?$/i.test(text)) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.username !== '' || url.password !== '' || url.hostname === '' || url.hostname.includes('*')) return undefined;
  return url.origin;
}

/** A comma-separated list of origins (server.cors_origins): the origins, or the first entry that is none. */
export function parseOriginList(text: string): { origins: string[] } | { invalid: string } {
  const origins: string[] = [];
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const origin = normaliseOrigin(entry);
    if (!origin) return { invalid: entry.trim() };
    if (!origins.includes(origin)) origins.push(origin);
  }
  return { origins };
}
