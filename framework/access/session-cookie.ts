import { hash, randomBytes } from 'node:crypto';
import { isLocalHost } from '../config/rules.ts';
import type { Config } from '../config/schema.ts';

export const SESSION_COOKIE = 'app_session';

/** On a public host the cookie is __Host- prefixed and Secure; on a local name, neither. */
export function sessionCookie(config: Config): { name: string; secure: boolean } {
  const local = isLocalHost(config.server.public_host);
  return { name: local ? SESSION_COOKIE : `__Host-${SESSION_COOKIE}`, secure: !local };
}

/** 256 random bits, base64url: the raw id the cookie carries and nothing stores. */
export const newSessionId = (): string => randomBytes(32).toString('base64url');

/**
 * What the database stores and looks sessions (and set-password tokens) up by. Every signed-in
 * request hashes its cookie: the one-shot hash skips the Hash object createHash builds each time.
 */
export const hashSecret = (raw: string): Buffer => hash('sha256', raw, 'buffer');
