import { isIP } from 'node:net';
import type { Config } from './schema.ts';
import { parseOriginList } from '../http/origins.ts';

/**
 * Whether the PostgreSQL driver reads this as a postgres:// URL. It parses with the WHATWG URL
 * parser (pg-connection-string: spaces and stray percent signs encoded first, an empty host, as in
 * a Unix socket URL, tried again with a placeholder), and throws a bare "Invalid URL" naming no
 * key for what it cannot read (a port past 65535, a broken host): refused here instead.
 */
function isPostgresUrl(url: string): boolean {
  if (!/^postgres(ql)?:\/\//.test(url)) return false;
  const encoded = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url).replace(/%25(\d\d)/g, '%$1') : url;
  return URL.canParse(encoded) || URL.canParse(encoded.replace('@/', '@___DUMMY___/'));
}

// The names proxy-addr (fastify's trustProxy) and the request ids' block list both know.
const TRUST_PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * server.trust_proxy as fastify's proxy-addr and the request ids' block list both read it: true,
 * false or empty, or a list of names, addresses and address/bits ranges (bits from 1, as
 * proxy-addr requires). Anything else would stop the start late, with a stack trace.
 */
function isTrustProxy(value: string): boolean {
  const setting = value.trim();
  if (setting === '' || setting === 'true' || setting === 'false') return true;
  return setting.split(',').every((raw) => {
    const entry = raw.trim();
    if (TRUST_PROXY_NAMES.has(entry)) return true;
    const [address = '', bits, ...rest] = entry.split('/');
    // A zone (fe80::1%eth0) is an address to node:net, not to proxy-addr.
    const family = address.includes('%') || rest.length > 0 ? 0 : isIP(address);
    if (family === 0) return false;
    if (bits === undefined) return true;
    return /^\d{1,3}$/.test(bits) && Number(bits) >= 1 && Number(bits) <= (family === 4 ? 32 : 128);
  });
}

/**
 * A host is local when it is a loopback name or address, a *.localhost name, or a bare name
 * with no dot (a machine name on a private network). Local hosts get plain-http links and a
 * session cookie without Secure and without the __Host- prefix.
 */
export function isLocalHost(host: string): boolean {
  const name = host
    .toLowerCase()
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (name === '::1' || /^127(\.\d{1,3}){3}$/.test(name)) return true;
  return !name.includes('.') && !name.includes(':');
}

/** Cross-key rules of the configuration table. Returns the first broken rule, or undefined. */
export function checkConfigRules(config: Config): string | undefined {
  const { issuer, client_id, client_secret, redirect_path } = config.auth.oidc;
  const oidcSet = [issuer, client_id, client_secret].filter((v) => v !== '').length;
  if (oidcSet !== 0 && oidcSet !== 3) {
    return 'auth.oidc.issuer, auth.oidc.client_id and auth.oidc.client_secret must be set all together or not at all';
  }
  if (issuer !== '' && !/^https?:\/\//.test(issuer)) {
    return 'auth.oidc.issuer must be an http(s) URL';
  }
  if (!redirect_path.startsWith('/api/v1/auth/') || redirect_path.length <= '/api/v1/auth/'.length) {
    return 'auth.oidc.redirect_path must lie under /api/v1/auth/';
  }
  if (/[?#\s]/.test(redirect_path) || redirect_path.includes('..')) {
    return 'auth.oidc.redirect_path must be a plain path';
  }
  if (/[\s/:]/.test(config.server.public_host.replace(/:\d+$/, ''))) {
    return 'server.public_host must be a host name, without scheme or path';
  }
  if (!URL.canParse(`http://${config.server.public_host}`)) {
    return 'server.public_host must be a host name, optionally with a port up to 65535';
  }
  if (!isTrustProxy(config.server.trust_proxy)) {
    return (
      'server.trust_proxy must be true, false, or a comma-separated list of IP addresses, CIDR ranges ' +
      '(address/bits) and the names loopback, linklocal, uniquelocal'
    );
  }
  const cors = parseOriginList(config.server.cors_origins);
  if ('invalid' in cors) {
    return cors.invalid === '*'
      ? 'server.cors_origins lists origins one by one (like https://app.example.com), never *'
      : 'server.cors_origins must be a comma-separated list of origins: scheme://host[:port], http or https, no path';
  }
  if (config.database.url !== '' && !isPostgresUrl(config.database.url)) {
    return 'database.url must be empty (embedded PostgreSQL) or a postgres:// URL';
  }
  if (config.database.direct_url !== '') {
    if (!isPostgresUrl(config.database.direct_url))
      return 'database.direct_url must be empty (the same as database.url) or a postgres:// URL';
    if (config.database.url === '')
      return 'database.direct_url needs database.url (the embedded PostgreSQL has one address)';
  }
  if (config.database.replica_url !== '') {
    if (!isPostgresUrl(config.database.replica_url))
      return 'database.replica_url must be empty (no replica) or a postgres:// URL';
    if (config.database.url === '')
      return 'database.replica_url needs database.url (the embedded PostgreSQL has no replica)';
  }
  const { storage, s3 } = config.files;
  if (storage === 's3' && s3.bucket.trim() === '') return 'files.s3.bucket must be set when files.storage is s3';
  if (s3.endpoint !== '' && !/^https?:\/\/[^\s/?#]+[^\s?#]*$/.test(s3.endpoint))
    return 'files.s3.endpoint must be empty (AWS) or an http(s) URL';
  if (s3.prefix.startsWith('/')) return 'files.s3.prefix must not start with /';
  return undefined;
}

/**
 * Origin of links sent to people (mailed set-password links and the like) for a tenant host:
 * https unless the host is local. A local host is reached directly, so its link carries the
 * server's port; a public host sits behind a TLS-terminating proxy on the default port.
 */
export function publicOrigin(host: string, serverPort: number): string {
  // Stored tenant hosts never carry a port (tenant_hosts check constraint).
  const name = host.toLowerCase();
  if (!isLocalHost(name)) return `https://${name}`;
  return serverPort === 80 || serverPort === 0 ? `http://${name}` : `http://${name}:${serverPort}`;
}
