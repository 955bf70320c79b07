import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestAccount {
  email?: string;
  email_verified?: unknown;
}

export interface TestIssuer {
  /** http://127.0.0.1:<port>, the issuer identifier. */
  url: string;
  /** Accounts by id; the claims findAccount returns. */
  accounts: Map<string, TestAccount>;
  /** Who the next interaction signs in as; null makes the person decline (access_denied). */
  nextLogin: string | null;
  /** Errors the provider reported, to explain a failing test. */
  errors: unknown[];
  /** How each token request authenticated the client: an Authorization: Basic header, or not. */
  tokenRequests: ('basic' | 'other')[];
  close(): Promise<void>;
}

export interface TestIssuerOptions {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  /** Client authentication methods the provider offers (default: its own list). */
  clientAuthMethods?: string[];
  /** Listen on this port instead of a random one. */
  port?: number;
}

/**
 * A real panva oidc-provider on 127.0.0.1 with a random port and the in-memory adapter. The
 * interaction (login + consent) is completed by the server itself for the account named by
 * nextLogin, so a test drives the whole code flow with plain HTTP requests.
 */
export async function startTestIssuer(options: TestIssuerOptions): Promise<TestIssuer> {
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const accounts = new Map<string, TestAccount>();
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const provider = new Provider(url, {
    clients: [
      {
        client_id: options.clientId,
        client_secret: options.clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        ...(options.clientAuthMethods ? { token_endpoint_auth_method: options.clientAuthMethods[0] } : {}),
      },
    ],
    ...(options.clientAuthMethods ? { clientAuthMethods: options.clientAuthMethods } : {}),
    jwks: { keys: [{ ...jwk, kid: 'test', use: 'sig', alg: 'RS256' }] },
    cookies: { keys: ['test-issuer-cookie-key'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // The relying party must prove possession of the verifier: a missing or wrong one fails.
    pkce: { required: () => true },
    features: { devInteractions: { enabled: false } },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Grant: 600, Session: 600 },
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: () => ({ sub, ...account }) };
    },
  });

  const issuer: TestIssuer = {
    url,
    accounts,
    nextLogin: null,
    errors: [],
    tokenRequests: [],
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  for (const event of ['server_error', 'grant.error', 'authorization.error', 'userinfo.error']) {
    provider.on(event, (...args: unknown[]) => issuer.errors.push({ event, error: args[1] }));
  }

  const providerHandler = provider.callback();
  handler = (req, res) => {
    if (req.method === 'POST' && req.url === '/token') {
      issuer.tokenRequests.push(/^basic /i.test(req.headers.authorization ?? '') ? 'basic' : 'other');
    }
    if (!req.url?.startsWith('/interaction/')) return providerHandler(req, res);
    void (async () => {
      const details = await provider.interactionDetails(req, res);
      const accountId = issuer.nextLogin;
      if (accountId === null) {
        await provider.interactionFinished(
          req,
          res,
          { error: 'access_denied', error_description: 'declined' },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
    })().catch((err: unknown) => {
      issuer.errors.push({ event: 'interaction', error: err });
      res.statusCode = 500;
      res.end(String(err));
    });
  };
  return issuer;
}

/**
 * Plays the browser at the issuer: follows redirects from the authorization URL with a cookie
 * jar until the issuer sends the browser back to the relying party; returns that URL.
 */
export async function visitIssuer(authorizationUrl: string, issuerUrl: string): Promise<URL> {
  const jar = new Map<string, string>();
  let next = new URL(authorizationUrl);
  for (let hop = 0; hop < 10; hop++) {
    if (next.origin !== issuerUrl) return next;
    const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
    const response = await fetch(next, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) {
      throw new Error(
        `the issuer answered ${response.status} at ${next.pathname}: ${(await response.text()).slice(0, 300)}`,
      );
    }
    next = new URL(location, next);
  }
  throw new Error('too many redirects at the issuer');
}
