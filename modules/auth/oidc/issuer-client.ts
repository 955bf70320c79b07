import * as oidc from 'openid-client';
import { ConfigError } from '../../../framework/config/config-error.ts';
import { isLocalHost } from '../../../framework/config/rules.ts';
import type { Config } from '../../../framework/entity/define.ts';
import { problem, type ProblemError } from '../../../framework/errors.ts';

/** What the callback learns from the issuer about the person signing in. */
export interface IssuedIdentity {
  subject: string;
  email: string | undefined;
  emailVerified: boolean;
}

export interface AuthorizationRequest {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

const REQUEST_TIMEOUT_SECONDS = 10;

/** A refusal the callback reports with a stable reason next to the problem code. */
export const refused = (reason: string, detail: string, extra: Record<string, unknown> = {}): ProblemError =>
  problem('OIDC_REFUSED', detail, { extensions: { reason, ...extra } });

/**
 * The relying-party side of one configured issuer. Discovery happens on first use, not at
 * startup, so the service starts while the issuer is down; a failed discovery is retried by the
 * next request instead of being cached.
 */
export class IssuerClient {
  private readonly issuer: URL;
  private readonly clientId: string;
  private readonly clientSecret: string;
  /** Plain http is accepted only for an issuer on a local name (development and tests). */
  private readonly insecure: boolean;
  private discovered: Promise<oidc.Configuration> | undefined;

  constructor(settings: Config['auth']['oidc']) {
    this.issuer = new URL(settings.issuer);
    this.clientId = settings.client_id;
    this.clientSecret = settings.client_secret;
    this.insecure = this.issuer.protocol === 'http:';
    if (this.insecure && !isLocalHost(this.issuer.host)) {
      throw new ConfigError('auth.oidc.issuer must be an https URL unless the issuer runs on a local name');
    }
  }

  private configuration(): Promise<oidc.Configuration> {
    this.discovered ??= this.discover().catch((err: unknown) => {
      this.discovered = undefined;
      throw err;
    });
    return this.discovered;
  }

  private async discover(): Promise<oidc.Configuration> {
    let found: oidc.Configuration;
    try {
      found = await oidc.discovery(this.issuer, this.clientId, this.clientSecret, undefined, {
        timeout: REQUEST_TIMEOUT_SECONDS,
        ...(this.insecure ? { execute: [oidc.allowInsecureRequests] } : {}),
      });
    } catch (err) {
      throw problem(
        'OIDC_ISSUER_UNAVAILABLE',
        `The identity provider's discovery document could not be read (${describe(err)})`,
      );
    }
    // RFC 8414: an issuer that lists no methods supports client_secret_basic.
    const server = found.serverMetadata();
    const methods = server.token_endpoint_auth_methods_supported ?? ['client_secret_basic'];
    const auth =
      !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
        ? oidc.ClientSecretPost(this.clientSecret)
        : oidc.ClientSecretBasic(this.clientSecret);
    const configuration = new oidc.Configuration(server, this.clientId, this.clientSecret, auth);
    configuration.timeout = REQUEST_TIMEOUT_SECONDS;
    if (this.insecure) oidc.allowInsecureRequests(configuration);
    return configuration;
  }

  /** Fresh state, nonce and PKCE verifier, and the issuer URL carrying the S256 challenge. */
  async authorizationRequest(redirectUri: string): Promise<AuthorizationRequest> {
    const configuration = await this.configuration();
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid email',
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url, state, nonce, codeVerifier };
  }

  /**
   * Checks the authorization response against the expected state, exchanges the code with the
   * PKCE verifier, checks the ID token (signature, audience, nonce) and reads the address: from
   * the ID token when it carries one, otherwise from the userinfo endpoint for the same subject.
   */
  async exchange(
    callbackUrl: URL,
    expected: { state: string; nonce: string; codeVerifier: string },
  ): Promise<IssuedIdentity> {
    const configuration = await this.configuration();
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
        expectedState: expected.state,
        expectedNonce: expected.nonce,
        pkceCodeVerifier: expected.codeVerifier,
        idTokenExpected: true,
      });
    } catch (err) {
      throw mapError(err);
    }
    const claims = tokens.claims();
    if (!claims) throw refused('response_invalid', 'The identity provider returned no ID token');
    let source: Record<string, unknown> = claims;
    if (claims.email === undefined) {
      try {
        source = await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub);
      } catch (err) {
        throw mapError(err);
      }
    }
    return {
      subject: claims.sub,
      email: typeof source.email === 'string' ? source.email : undefined,
      // Only a JSON true counts; some issuers send the string "true", which is not a verification.
      emailVerified: source.email_verified === true,
    };
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
  return String(err);
}

/** Network trouble is the issuer being away (502); anything the issuer or the checks said is a refusal (401). */
function mapError(err: unknown): ProblemError {
  if (err instanceof oidc.AuthorizationResponseError) {
    return refused('issuer_error', `The identity provider refused the sign-in (${err.error})`, { error: err.error });
  }
  if (err instanceof oidc.ResponseBodyError) {
    return refused('code_rejected', `The identity provider rejected the authorization code (${err.error})`, {
      error: err.error,
    });
  }
  // An error page or a 5xx where JSON was due is the issuer being unwell, not a verdict.
  if (
    err instanceof oidc.ClientError &&
    err.code !== 'OAUTH_RESPONSE_IS_NOT_CONFORM' &&
    err.code !== 'OAUTH_RESPONSE_IS_NOT_JSON'
  ) {
    return refused('response_invalid', `The identity provider's response failed a check (${err.message})`);
  }
  return problem('OIDC_ISSUER_UNAVAILABLE', `The identity provider could not be reached (${describe(err)})`);
}
