import type { Config } from './schema.ts';
import { parseOriginList } from '../http/origins.ts';

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
  const cors = parseOriginList(config.server.cors_origins);
  if ('invalid' in cors) {
    return cors.invalid === '*'
      ? 'server.cors_origins lists origins one by one (like https://app.example.com), never *'
      : 'server.cors_origins must be a comma-separated list of origins: scheme://host[:port], http or https, no path';
  }
  if (config.database.url !== '' && !/^postgres(ql)?:\/\//.test(config.database.url)) {
    return 'database.url must be empty (embedded PostgreSQL) or a postgres:// URL';
  }
  if (config.database.direct_url !== '') {
    if (!/^postgres(ql)?:\/\//.test(config.database.direct_url))
      return 'database.direct_url must be empty (the same as database.url) or a postgres:// URL';
    if (config.database.url === '')
      return 'database.direct_url needs database.url (the embedded PostgreSQL has one address)';
  }
  if (config.database.replica_url !== '') {
    if (!/^postgres(ql)?:\/\//.test(config.database.replica_url))
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
