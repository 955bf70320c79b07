import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { buildApp, ROOT } from '../../../framework/app.ts';
import { validateConfig } from '../../../framework/config/load.ts';
import { allModules } from '../../../modules/index.ts';
import { signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { startTestIssuer, visitIssuer, type TestIssuer } from './oidc-issuer.ts';

// SPEC Configuration: auth.oidc.* all or none, the secret from the environment, redirect_path
// under /api/v1/auth/; Single sign-on: routes exist only when an issuer is configured.

const SECRET_ENV = { TENANTRY_AUTH_OIDC_CLIENT_SECRET: 'from-the-environment' };

const run = promisify(execFile);

/** Starts the real entry point with a config file; resolves with its exit code and stderr. */
async function startMain(yaml: string, env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tenantry-oidc-config-'));
  try {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, yaml);
    await run(join(ROOT, 'node_modules/.bin/node'), ['main.ts', '--role', 'web', '--config', file], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      timeout: 20_000,
    });
    return { code: 0, stderr: '' };
  } catch (err) {
    const failed = err as { code?: number; stderr?: string };
    return { code: failed.code ?? -1, stderr: failed.stderr ?? '' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

describe('startup refusals', () => {
  it('refuses an issuer configured without its client id or secret, and a secret without an issuer', () => {
    const half = [
      [{ issuer: 'https://id.example.com', client_id: 'app' }, {}],
      [{ issuer: 'https://id.example.com' }, SECRET_ENV],
      [{ client_id: 'app' }, SECRET_ENV],
      [{}, SECRET_ENV],
    ] as const;
    for (const [oidc, env] of half) {
      expect(
        () => validateConfig({ auth: { oidc: { ...oidc } } }, 'config.yaml', { ...env }),
        JSON.stringify(oidc),
      ).toThrow(
        /auth\.oidc\.issuer, auth\.oidc\.client_id and auth\.oidc\.client_secret must be set all together or not at all/,
      );
    }
    const whole = validateConfig(
      { auth: { oidc: { issuer: 'https://id.example.com', client_id: 'app' } } },
      'config.yaml',
      SECRET_ENV,
    );
    expect(whole.auth.oidc.client_secret).toBe('from-the-environment');
    expect(whole.auth.oidc.redirect_path).toBe('/api/v1/auth/oidc/callback');
  });

  it('refuses a client secret written in the file', () => {
    expect(() =>
      validateConfig(
        { auth: { oidc: { issuer: 'https://id.example.com', client_id: 'app', client_secret: 's3cret' } } },
        'config.yaml',
        {},
      ),
    ).toThrow(/client_secret must not be written in the file; supply it through TENANTRY_AUTH_OIDC_CLIENT_SECRET/);
  });

  it('refuses a redirect path outside /api/v1/auth/', () => {
    for (const redirect_path of [
      '/api/v1/user/callback',
      '/oidc/callback',
      '/api/v1/auth/',
      '/api/v1/auth/../user/x',
      'https://evil.test/api/v1/auth/cb',
    ]) {
      expect(
        () =>
          validateConfig(
            { auth: { oidc: { issuer: 'https://id.example.com', client_id: 'app', redirect_path } } },
            'config.yaml',
            SECRET_ENV,
          ),
        redirect_path,
      ).toThrow(/auth\.oidc\.redirect_path must/);
    }
  });

  it('refuses a plain-http issuer that is not on a local name', async () => {
    const config = testConfig({ auth: { oidc: { issuer: 'http://id.example.com', client_id: 'app' } } }, SECRET_ENV);
    await expect(
      buildApp({ config, modules: allModules, databaseUrl: 'postgres://unused.invalid/none', role: 'web' }),
    ).rejects.toThrow(/auth\.oidc\.issuer must be an https URL unless the issuer runs on a local name/);
  });

  it('refuses a redirect path that another route already serves', async () => {
    const config = testConfig(
      {
        auth: {
          oidc: { issuer: 'https://id.example.com', client_id: 'app', redirect_path: '/api/v1/auth/oidc/start' },
        },
      },
      SECRET_ENV,
    );
    await expect(
      buildApp({ config, modules: allModules, databaseUrl: 'postgres://unused.invalid/none', role: 'web' }),
    ).rejects.toThrow(/route GET \/api\/v1\/auth\/oidc\/start is declared twice/);
  });

  it('the service exits at startup with a half-configured issuer or a bad redirect path', async () => {
    const [half, badPath] = await Promise.all([
      startMain('auth:\n  oidc:\n    issuer: https://id.example.com\n    client_id: app\n'),
      startMain(
        'auth:\n  oidc:\n    issuer: https://id.example.com\n    client_id: app\n    redirect_path: /oidc/callback\n',
        SECRET_ENV,
      ),
    ]);
    expect(half.code).toBe(1);
    expect(half.stderr).toMatch(
      /^tenantry: .*config\.yaml: auth\.oidc\.issuer, auth\.oidc\.client_id and auth\.oidc\.client_secret must be set all together or not at all/,
    );
    expect(badPath.code).toBe(1);
    expect(badPath.stderr).toMatch(/^tenantry: .*auth\.oidc\.redirect_path must lie under \/api\/v1\/auth\//);
    expect(badPath.stderr).not.toContain('from-the-environment');
  });
});

describe('no issuer configured', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('registers no single sign-on routes: both paths are 404', async () => {
    for (const path of ['/api/v1/auth/oidc/start', '/api/v1/auth/oidc/callback?code=x&state=y']) {
      const res = await app.http().get(path);
      expect(res.status, path).toBe(404);
      expect(res.body.code).toBe('ROUTE_NOT_FOUND');
    }
  });

  it('lists none in OpenAPI', async () => {
    const res = await app.http().get('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    const paths = Object.keys(res.body.paths);
    expect(paths.length).toBeGreaterThan(0);
    expect(paths.filter((p) => p.includes('oidc'))).toEqual([]);
    const operationIds = Object.values(
      res.body.paths as Record<string, Record<string, { operationId?: string }>>,
    ).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(operationIds).not.toContain('auth-oidc-start');
  });

  it('answers 502 while the configured issuer cannot be reached, and recovers without a restart', async () => {
    const port = await closedPort();
    const down = await startTestApp({
      databaseUrl: app.databaseUrl,
      config: testConfig({ auth: { oidc: { issuer: `http://127.0.0.1:${port}`, client_id: 'app' } } }, SECRET_ENV),
    });
    try {
      const res = await down.http().get('/api/v1/auth/oidc/start');
      expect(res.status).toBe(502);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe('OIDC_ISSUER_UNAVAILABLE');
      expect(res.headers['set-cookie']).toBeUndefined();

      // A failed discovery is not remembered: once the issuer is up, the next start works.
      const late = await startTestIssuer({
        clientId: 'app',
        clientSecret: 'from-the-environment',
        redirectUris: ['http://operator.localhost/api/v1/auth/oidc/callback'],
        port,
      });
      try {
        const again = await down.http().get('/api/v1/auth/oidc/start');
        expect(again.status, JSON.stringify(again.body)).toBe(302);
        expect(new URL(again.headers.location!).origin).toBe(late.url);
      } finally {
        await late.close();
      }
    } finally {
      await down.close();
    }
  });
});

describe('on a public host, with a custom redirect path and an issuer offering only client_secret_post', () => {
  const CLIENT_ID = 'tenantry-public';
  const CLIENT_SECRET = 'post-only-secret';
  const HOST = 'sso.example.com';
  const REDIRECT_PATH = '/api/v1/auth/sso/return';
  let issuer: TestIssuer;
  let app: TestApp;

  beforeAll(async () => {
    issuer = await startTestIssuer({
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      redirectUris: [`https://${HOST}${REDIRECT_PATH}`],
      clientAuthMethods: ['client_secret_post'],
    });
    app = await startTestApp({
      config: testConfig(
        {
          server: { public_host: HOST },
          auth: { oidc: { issuer: issuer.url, client_id: CLIENT_ID, redirect_path: REDIRECT_PATH } },
        },
        { TENANTRY_AUTH_OIDC_CLIENT_SECRET: CLIENT_SECRET },
      ),
    });
  });
  afterAll(async () => {
    await app?.close();
    await issuer?.close();
  });

  it('uses __Host-app_oidc with Secure, an https redirect URI, and signs in through the configured path', async () => {
    const operatorAdmin = await signInAs(app, app.operator, ['*'], { email: 'ops@example.com' });
    issuer.accounts.set('ops', { email: 'ops@example.com', email_verified: true });
    issuer.nextLogin = 'ops';

    const started = await app.http(HOST).get('/api/v1/auth/oidc/start?next=/admin/health');
    expect(started.status, JSON.stringify(started.body)).toBe(302);
    const stateCookie = (started.headers['set-cookie'] as unknown as string[]).find((c) =>
      c.startsWith('__Host-app_oidc='),
    )!;
    expect(stateCookie).toMatch(/; Secure/);
    expect(stateCookie).toMatch(/; HttpOnly/);
    expect(stateCookie).toMatch(/; SameSite=Lax/);
    expect(stateCookie).toMatch(/; Path=\//);
    expect(stateCookie).not.toMatch(/Domain=/i);
    const authorization = new URL(started.headers.location!);
    expect(authorization.searchParams.get('redirect_uri')).toBe(`https://${HOST}${REDIRECT_PATH}`);

    const callback = await visitIssuer(authorization.href, issuer.url);
    expect(callback.origin).toBe(`https://${HOST}`);
    expect(callback.pathname).toBe(REDIRECT_PATH);

    // The default callback path is not served when another one is configured.
    const defaultPath = await app
      .http(HOST)
      .get(`/api/v1/auth/oidc/callback${callback.search}`)
      .set('Cookie', stateCookie.split(';')[0]!);
    expect(defaultPath.status).toBe(404);

    const res = await app
      .http(HOST)
      .get(`${callback.pathname}${callback.search}`)
      .set('Cookie', stateCookie.split(';')[0]!);
    expect(res.status, JSON.stringify(res.body)).toBe(302);
    expect(res.headers.location).toBe('/admin/health');
    // The issuer offers only client_secret_post: the secret went in the body, not a Basic header.
    expect(issuer.tokenRequests).toEqual(['other']);
    const cookies = res.headers['set-cookie'] as unknown as string[];
    expect(cookies.find((c) => c.startsWith('__Host-app_oidc=;'))).toMatch(/; Secure/);
    const session = cookies.find((c) => c.startsWith('__Host-app_session='))!;
    expect(session).toMatch(/; Secure/);
    expect(session).toMatch(/; HttpOnly/);
    const me = await app.http(HOST).get('/api/v1/admin/resources').set('Cookie', session.split(';')[0]!);
    expect(me.status).toBe(200);
    expect(operatorAdmin.userId).toBeTruthy();
  });

  it('answers 502 and clears the state cookie when the issuer is gone at the callback', async () => {
    issuer.accounts.set('late', { email: 'late@example.com', email_verified: true });
    await signInAs(app, app.operator, [], { email: 'late@example.com' });
    issuer.nextLogin = 'late';
    const started = await app.http(HOST).get('/api/v1/auth/oidc/start');
    const stateCookie = (started.headers['set-cookie'] as unknown as string[]).find((c) =>
      c.startsWith('__Host-app_oidc='),
    )!;
    const callback = await visitIssuer(started.headers.location!, issuer.url);
    await issuer.close();
    const res = await app
      .http(HOST)
      .get(`${callback.pathname}${callback.search}`)
      .set('Cookie', stateCookie.split(';')[0]!);
    expect(res.status, JSON.stringify(res.body)).toBe(502);
    expect(res.body.code).toBe('OIDC_ISSUER_UNAVAILABLE');
    expect((res.headers['set-cookie'] as unknown as string[]).some((c) => c.startsWith('__Host-app_oidc=;'))).toBe(
      true,
    );
  });
});
