import { describe, expect, it } from 'vitest';
import {
  openState,
  sealState,
  stateCookie,
  stateKey,
  type OidcState,
} from '../../../modules/auth/oidc/state-cookie.ts';
import { safeNextPath } from '../../../modules/auth/oidc/next-path.ts';
import { testConfig } from '../../helpers/config.ts';

// The app_oidc cookie: named and flagged like the session cookie, sealed so it can be neither
// read nor forged, and short-lived; and the rule for the local `next` path.

const state: OidcState = {
  state: 's'.repeat(43),
  nonce: 'n'.repeat(43),
  codeVerifier: 'v'.repeat(43),
  tenantId: '00000000-0000-4000-8000-000000000001',
  next: '/admin/tasks',
  expiresAt: Math.floor(Date.now() / 1000) + 600,
};

describe('app_oidc cookie', () => {
  it('is app_oidc without Secure on a local public host, __Host-app_oidc with Secure otherwise', () => {
    expect(stateCookie(testConfig({ server: { public_host: 'localhost' } }))).toEqual({
      name: 'app_oidc',
      secure: false,
    });
    expect(stateCookie(testConfig({ server: { public_host: 'admin.localhost' } }))).toEqual({
      name: 'app_oidc',
      secure: false,
    });
    expect(stateCookie(testConfig({ server: { public_host: 'tenantry.example.com' } }))).toEqual({
      name: '__Host-app_oidc',
      secure: true,
    });
  });

  it('opens what it sealed, with the same key only', () => {
    const key = stateKey('secret-one');
    const sealed = sealState(key, state);
    expect(openState(key, sealed, new Date())).toEqual(state);
    expect(openState(stateKey('secret-two'), sealed, new Date())).toBeUndefined();
    // Two seals of the same state differ (fresh IV), so nothing can be matched across cookies.
    expect(sealState(key, state)).not.toBe(sealed);
  });

  it('refuses an expired, truncated or garbled cookie', () => {
    const key = stateKey('secret-one');
    const sealed = sealState(key, state);
    expect(openState(key, sealed, new Date((state.expiresAt + 1) * 1000))).toBeUndefined();
    expect(openState(key, sealed.slice(0, -4), new Date())).toBeUndefined();
    expect(openState(key, `${sealed}.x`, new Date())).toBeUndefined();
    expect(openState(key, sealed.replace(/^v1\./, 'v2.'), new Date())).toBeUndefined();
    expect(openState(key, 'v1.', new Date())).toBeUndefined();
    expect(openState(key, '', new Date())).toBeUndefined();
    expect(
      openState(key, `v1.${Buffer.from(JSON.stringify(state)).toString('base64url')}`, new Date()),
    ).toBeUndefined();
  });
});

describe('next path after single sign-on', () => {
  it('keeps a local path and sends anything else to /admin', () => {
    expect(safeNextPath('/admin/task/task?page=2')).toBe('/admin/task/task?page=2');
    expect(safeNextPath('/')).toBe('/');
    for (const unsafe of [
      undefined,
      '',
      'admin',
      '//evil.test',
      '/\\evil.test',
      '/a\\b',
      'https://evil.test/x',
      'javascript:alert(1)',
      '/\nx',
      `/${'a'.repeat(2001)}`,
    ]) {
      expect(safeNextPath(unsafe), JSON.stringify(unsafe)).toBe('/admin');
    }
  });
});
