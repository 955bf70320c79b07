import { isIP } from 'node:net';
import { privateRefusal, refusalOf } from './address-check.ts';

/** What the installation lets deliveries reach (webhooks.allow_http, webhooks.allow_private_networks). */
export interface SendPolicy {
  allowHttp: boolean;
  allowPrivateNetworks: boolean;
}

/** The policy config.yaml's webhooks section sets. */
export const policyOf = (webhooks: { allow_http: boolean; allow_private_networks: boolean }): SendPolicy => ({
  allowHttp: webhooks.allow_http,
  allowPrivateNetworks: webhooks.allow_private_networks,
});

/** The authority as written, between "//" and the path, query or fragment (WHATWG URLs skip an empty one). */
const AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/([^/\\?#]*)/i;

/**
 * Why no delivery to this URL could ever be made under the policy, whatever its host resolves to,
 * or undefined. The same rules refuse the URL when an endpoint is created or changed (422) and
 * when an attempt is made (a refused attempt): not a URL, another scheme than http(s), a user name
 * or password, an empty authority (`http:///x`, which a URL parser reads as host `x`), `http:`
 * while webhooks.allow_http is off, and a literal non-public address while
 * webhooks.allow_private_networks is off. A host name passes here: its addresses are checked at
 * every attempt (checkedTarget), as DNS may answer differently each time.
 */
export function urlRefusal(url: string, policy: SendPolicy): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'the URL does not parse';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'an http(s) URL is needed';
  if (parsed.username || parsed.password)
    return 'a URL with a user name or password is not accepted; put a token in its path or query';
  if (!AUTHORITY.exec(url)?.[1] || !parsed.hostname)
    return 'the URL has no host: nothing stands between "//" and the path (as in http:///x)';
  if (parsed.protocol === 'http:' && !policy.allowHttp)
    return 'http: URLs are not allowed, only https: (webhooks.allow_http is off)';
  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  if (!policy.allowPrivateNetworks && isIP(host)) {
    const why = refusalOf(host);
    if (why) return privateRefusal(host, host, why);
  }
  return undefined;
}
