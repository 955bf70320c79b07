import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { Config } from '../../../framework/entity/define.ts';
import { isLocalHost } from '../../../framework/config/rules.ts';

export const STATE_COOKIE = 'app_oidc';

/** A sign-in has ten minutes between leaving for the issuer and coming back. */
export const STATE_LIFETIME_SECONDS = 600;

/** What the browser carries between start and callback; sealed, so it can be neither read nor forged. */
export interface OidcState {
  state: string;
  nonce: string;
  codeVerifier: string;
  /** The tenant that started the sign-in; a cookie carried to another tenant's host is refused. */
  tenantId: string;
  /** Safe local path to land on afterwards. */
  next: string;
  /** Unix seconds; the cookie's Max-Age is the browser's half of the same limit. */
  expiresAt: number;
}

/** Same rule as the session cookie: __Host- and Secure on a public host, neither on a local name. */
export function stateCookie(config: Config): { name: string; secure: boolean } {
  const local = isLocalHost(config.server.public_host);
  return { name: local ? STATE_COOKIE : `__Host-${STATE_COOKIE}`, secure: !local };
}

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * The sealing key is derived from the client secret with HKDF: every web process configured for
 * the issuer already shares that secret and nobody else knows it, so no extra key has to be
 * stored or distributed. Rotating the secret invalidates sign-ins in flight (ten minutes at most).
 */
export function stateKey(clientSecret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', clientSecret, 'tenantry', 'app_oidc state cookie v1', 32));
}

/** AES-256-GCM: the PKCE verifier stays unreadable and any changed byte fails authentication. */
export function sealState(key: Buffer, state: OidcState): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(`${STATE_COOKIE}.${VERSION}`));
  const body = Buffer.concat([cipher.update(JSON.stringify(state), 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url')}`;
}

/** Undefined for anything not sealed by us with this key, malformed or expired at `now` (the service's clock). */
export function openState(key: Buffer, sealed: string, now: Date): OidcState | undefined {
  const [version, data, extra] = sealed.split('.');
  if (version !== VERSION || !data || extra !== undefined) return undefined;
  const raw = Buffer.from(data, 'base64url');
  if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
  let plain: string;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(`${STATE_COOKIE}.${VERSION}`));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString(
      'utf8',
    );
  } catch {
    return undefined;
  }
  const parsed = JSON.parse(plain) as OidcState;
  if (typeof parsed.expiresAt !== 'number' || parsed.expiresAt * 1000 <= now.getTime()) return undefined;
  return parsed;
}

export function setStateCookie(reply: FastifyReply, config: Config, value: string): void {
  const { name, secure } = stateCookie(config);
  reply.setCookie(name, value, { path: '/', httpOnly: true, sameSite: 'lax', secure, maxAge: STATE_LIFETIME_SECONDS });
}

export function clearStateCookie(reply: FastifyReply, config: Config): void {
  const { name, secure } = stateCookie(config);
  reply.clearCookie(name, { path: '/', httpOnly: true, sameSite: 'lax', secure });
}
