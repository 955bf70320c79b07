import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig, validateConfig, ConfigError } from '../../framework/config/load.ts';
import { isLocalHost, publicOrigin } from '../../framework/config/rules.ts';
import { sessionCookie } from '../../framework/access/session-cookie.ts';
import { createMailer } from '../../framework/mail/mailer.ts';
import { ROOT } from '../../framework/app.ts';

const TRUST_PROXY_RULE =
  'server.trust_proxy must be true, false, or a comma-separated list of IP addresses, CIDR ranges (address/bits) ' +
  'and the names loopback, linklocal, uniquelocal';

const dir = mkdtempSync(join(tmpdir(), 'tenantry-config-'));
let counter = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a config.yaml with this text and loads it with this environment. */
function load(text: string, env: NodeJS.ProcessEnv = {}) {
  const file = join(dir, `config-${++counter}.yaml`);
  writeFileSync(file, text);
  return loadConfig(file, env);
}

/** The ConfigError message of a document that must be refused. */
function refusal(raw: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): string {
  try {
    validateConfig(raw, 'config.yaml', env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${JSON.stringify(raw)}`);
}

describe('config.yaml defaults', () => {
  it('an empty file is valid and gets every documented default', () => {
    const config = load('');
    expect(config.server).toMatchObject({ host: '127.0.0.1', port: 3000, public_host: 'localhost' });
    expect(config.database.url).toBe('');
    expect(config.auth.oidc).toEqual({
      issuer: '',
      client_id: '',
      client_secret: '',
      redirect_path: '/api/v1/auth/oidc/callback',
    });
    expect(config.mail.host).toBe('');
  });

  it('the shipped config.yaml is valid', () => {
    const config = loadConfig(join(ROOT, 'config.yaml'), {});
    expect(config.server.port).toBe(3000);
    expect(config.database.url).toBe('');
  });
});

describe('auth.oidc.issuer, client_id, client_secret: all of them or none', () => {
  const secret = { TENANTRY_AUTH_OIDC_CLIENT_SECRET: 's3cret' };

  it('accepts none of them', () => {
    expect(validateConfig({}, 'config.yaml').auth.oidc.issuer).toBe('');
  });

  it('accepts all three, the secret from the environment', () => {
    const config = validateConfig(
      { auth: { oidc: { issuer: 'https://id.example.com', client_id: 'tenantry' } } },
      'config.yaml',
      secret,
    );
    expect(config.auth.oidc).toMatchObject({
      issuer: 'https://id.example.com',
      client_id: 'tenantry',
      client_secret: 's3cret',
    });
  });

  it.each([
    ['issuer alone', { issuer: 'https://id.example.com' }, {}],
    ['client_id alone', { client_id: 'tenantry' }, {}],
    ['issuer and client_id without the secret', { issuer: 'https://id.example.com', client_id: 'tenantry' }, {}],
    ['the secret alone', {}, secret],
    ['issuer and secret without client_id', { issuer: 'https://id.example.com' }, secret],
  ])('refuses %s', (_label, oidc, env) => {
    const message = refusal({ auth: { oidc } }, env);
    expect(message).toBe(
      'config.yaml: auth.oidc.issuer, auth.oidc.client_id and auth.oidc.client_secret must be set all together or not at all',
    );
  });

  it('refuses a secret written in the file: it is supplied through the environment', () => {
    const message = refusal({
      auth: { oidc: { issuer: 'https://id.example.com', client_id: 'x', client_secret: 'in-file' } },
    });
    expect(message).toContain('auth.oidc.client_secret');
    expect(message).toContain('TENANTRY_AUTH_OIDC_CLIENT_SECRET');
    expect(message).not.toContain('in-file');
  });
});

describe('auth.oidc.redirect_path', () => {
  it('defaults to /api/v1/auth/oidc/callback', () => {
    expect(validateConfig({}, 'config.yaml').auth.oidc.redirect_path).toBe('/api/v1/auth/oidc/callback');
  });

  it('accepts another path under /api/v1/auth/', () => {
    expect(
      validateConfig({ auth: { oidc: { redirect_path: '/api/v1/auth/sso/return' } } }, 'config.yaml').auth.oidc
        .redirect_path,
    ).toBe('/api/v1/auth/sso/return');
  });

  it.each([
    '/callback',
    '/api/v1/users/callback',
    '/api/v1/auth/',
    '/api/v1/authx/callback',
    'https://evil.example/api/v1/auth/cb',
    '/api/v1/auth/../admin',
  ])('refuses %s', (path) => {
    const message = refusal({ auth: { oidc: { redirect_path: path } } });
    expect(message).toMatch(
      /^config\.yaml: auth\.oidc\.redirect_path must (lie under \/api\/v1\/auth\/|be a plain path)$/,
    );
  });
});

describe('files', () => {
  it('files.dir defaults to data/files', () => {
    expect(validateConfig({}, 'config.yaml').files.dir).toBe('data/files');
    expect(validateConfig({ files: { dir: '/srv/blobs' } }, 'config.yaml').files.dir).toBe('/srv/blobs');
  });

  it('files.max_bytes defaults to 26214400', () => {
    expect(validateConfig({}, 'config.yaml').files.max_bytes).toBe(26214400);
    expect(validateConfig({ files: { max_bytes: 1 } }, 'config.yaml').files.max_bytes).toBe(1);
  });

  it.each([0, -1])('files.max_bytes is refused below 1 (%i)', (value) => {
    expect(refusal({ files: { max_bytes: value } })).toBe('config.yaml: files.max_bytes must be at least 1');
  });

  it('files.quota_bytes is passed through as given', () => {
    for (const value of [0, 1, 123_456_789, 5 * 1024 ** 4]) {
      expect(validateConfig({ files: { quota_bytes: value } }, 'config.yaml').files.quota_bytes).toBe(value);
    }
  });
});

describe('mail.host', () => {
  it('set: mail goes out over SMTP', () => {
    const config = validateConfig({ mail: { host: 'smtp.example.com', port: 2525 } }, 'config.yaml');
    const mailer = createMailer(config.mail);
    expect(mailer.mode).toBe('smtp');
    mailer.close();
  });

  it('empty: an in-memory mailbox receives it', async () => {
    const config = validateConfig({}, 'config.yaml');
    const mailer = createMailer(config.mail);
    expect(mailer.mode).toBe('memory');
    await mailer.send({ to: 'a@example.com', subject: 'hi', text: 'body' });
    expect((mailer as unknown as { messages: unknown[] }).messages).toHaveLength(1);
  });
  // The startup warning for the in-memory mailbox is asserted on the real process log in process-roles.test.ts.
});

describe('server.public_host', () => {
  it.each(['localhost', 'operator.localhost', 'LOCALHOST', '127.0.0.1', 'devbox', 'localhost:3000'])(
    '%s is local',
    (host) => {
      expect(isLocalHost(host)).toBe(true);
    },
  );

  it.each(['example.com', 'app.example.com', '10.0.0.5', 'localhost.example.com'])('%s is not local', (host) => {
    expect(isLocalHost(host)).toBe(false);
  });

  it('a local name turns off the Secure flag and the __Host- prefix of the session cookie', () => {
    expect(sessionCookie(validateConfig({ server: { public_host: 'localhost' } }, 'config.yaml'))).toEqual({
      name: 'app_session',
      secure: false,
    });
    expect(sessionCookie(validateConfig({ server: { public_host: 'tenantry.localhost' } }, 'config.yaml'))).toEqual({
      name: 'app_session',
      secure: false,
    });
  });

  it('a public name keeps the Secure flag and the __Host- prefix', () => {
    expect(sessionCookie(validateConfig({ server: { public_host: 'app.example.com' } }, 'config.yaml'))).toEqual({
      name: '__Host-app_session',
      secure: true,
    });
  });

  it('links are https unless the host is local', () => {
    expect(publicOrigin('acme.example.com', 3000)).toBe('https://acme.example.com');
    expect(publicOrigin('acme.localhost', 3000)).toBe('http://acme.localhost:3000');
    expect(publicOrigin('localhost', 80)).toBe('http://localhost');
  });

  it('refuses a scheme or a path', () => {
    expect(refusal({ server: { public_host: 'https://app.example.com' } })).toBe(
      'config.yaml: server.public_host must be a host name, without scheme or path',
    );
    expect(refusal({ server: { public_host: 'app.example.com/x' } })).toContain('server.public_host');
  });
});

describe('environment overrides TENANTRY_<SECTION>_<KEY>', () => {
  it('TENANTRY_SERVER_PORT overrides server.port, converted to an integer', () => {
    const config = load('server:\n  port: 3000\n', { TENANTRY_SERVER_PORT: '8081' });
    expect(config.server.port).toBe(8081);
  });

  it('TENANTRY_DATABASE_URL overrides database.url', () => {
    const url = 'postgres://app:pw@db.internal:5432/tenantry';
    expect(load('database:\n  url: ""\n', { TENANTRY_DATABASE_URL: url }).database.url).toBe(url);
  });

  it('TENANTRY_AUTH_OIDC_CLIENT_SECRET supplies the secret', () => {
    const config = load('auth:\n  oidc:\n    issuer: https://id.example.com\n    client_id: tenantry\n', {
      TENANTRY_AUTH_OIDC_CLIENT_SECRET: 'from-env',
    });
    expect(config.auth.oidc.client_secret).toBe('from-env');
  });

  it('a keyed section whose key contains an underscore is reached too (TENANTRY_SERVER_PUBLIC_HOST)', () => {
    expect(load('', { TENANTRY_SERVER_PUBLIC_HOST: 'app.example.com' }).server.public_host).toBe('app.example.com');
  });

  it('an override that is not of the key’s type is refused naming the variable', () => {
    expect(() => load('', { TENANTRY_SERVER_PORT: 'eighty' })).toThrow(
      /server\.port \(from TENANTRY_SERVER_PORT\) must be an integer/,
    );
  });

  it('the rules apply to overridden values too', () => {
    expect(() => load('', { TENANTRY_FILES_MAX_BYTES: '0' })).toThrow(/files\.max_bytes must be at least 1/);
  });
});

describe('a missing or invalid file: one clear message naming the file, the key and the rule', () => {
  it('missing file', () => {
    const file = join(dir, 'nope.yaml');
    expect(() => loadConfig(file, {})).toThrow(
      new ConfigError(`${file}: the configuration file is missing or unreadable`),
    );
  });

  it('invalid YAML names the file and the position', () => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, 'server:\n  port: [3000\nmail: {\n');
    expect(() => loadConfig(file, {})).toThrow(
      new RegExp(`^${file.replaceAll('.', '\\.')}: not valid YAML at line \\d+, column \\d+ \\(.+\\)$`),
    );
  });

  it('a top level that is not a mapping', () => {
    expect(() => load('- a\n- b\n')).toThrow(/: the top level must be a mapping of sections$/);
  });

  it.each([
    ['server:\n  port: "eighty"\n', 'server.port must be an integer'],
    ['server:\n  port: 70000\n', 'server.port must be at most 65535'],
    ['server:\n  host: ""\n', 'server.host must not be empty'],
    ['server:\n  log_level: loud\n', 'server.log_level must be one of fatal, error, warn, info, debug, trace, silent'],
    ['mail:\n  secure: maybe\n', 'mail.secure must be true or false'],
    ['files: 12\n', 'files must be a mapping'],
    ['server:\n  prot: 3000\n', 'server.prot is not a known key'],
    ['servers:\n  port: 3000\n', 'servers is not a known key'],
    ['database:\n  url: mysql://x/y\n', 'database.url must be empty (embedded PostgreSQL) or a postgres:// URL'],
    [
      'database:\n  url: postgres://pooler/t\n  direct_url: mysql://x/y\n',
      'database.direct_url must be empty (the same as database.url) or a postgres:// URL',
    ],
    [
      'database:\n  direct_url: postgres://db/t\n',
      'database.direct_url needs database.url (the embedded PostgreSQL has one address)',
    ],
    ['database:\n  prepared_statements: sometimes\n', 'database.prepared_statements must be one of named, unnamed'],
    [
      'database:\n  url: postgres://db/t\n  replica_url: mysql://x/y\n',
      'database.replica_url must be empty (no replica) or a postgres:// URL',
    ],
    [
      'database:\n  replica_url: postgres://replica/t\n',
      'database.replica_url needs database.url (the embedded PostgreSQL has no replica)',
    ],
    ['database:\n  replica_max_lag_ms: -1\n', 'database.replica_max_lag_ms must be at least 0'],
    // A URL no parser reads (a port past 65535, a broken host) is no postgres:// URL: refused here
    // naming its key, not later by the driver with a bare "Invalid URL".
    [
      'database:\n  url: postgres://app:pw@db:99999/t\n',
      'database.url must be empty (embedded PostgreSQL) or a postgres:// URL',
    ],
    [
      'database:\n  url: "postgres://app:pw@[::1/t"\n',
      'database.url must be empty (embedded PostgreSQL) or a postgres:// URL',
    ],
    [
      'database:\n  url: postgres://pooler/t\n  direct_url: postgres://db:70000/t\n',
      'database.direct_url must be empty (the same as database.url) or a postgres:// URL',
    ],
    [
      'database:\n  url: postgres://db/t\n  replica_url: postgres://replica:123456/t\n',
      'database.replica_url must be empty (no replica) or a postgres:// URL',
    ],
    [
      'server:\n  public_host: app.example.com:99999\n',
      'server.public_host must be a host name, optionally with a port up to 65535',
    ],
    // What fastify's proxy-addr and the request ids' block list cannot read stops the start here,
    // not after the migrations with a stack trace or a message naming no key.
    ...['nonsense', '10.0.0.0/99', '10.0.0.0/0', '"loopback,"', '10.0.0.0/255.0.0.0', 'Loopback', 'fe80::1%eth0'].map(
      (value) => [`server:\n  trust_proxy: ${value}\n`, TRUST_PROXY_RULE] as [string, string],
    ),
  ])('%j → %s', (text, rule) => {
    let message = '';
    const file = join(dir, `invalid-${++counter}.yaml`);
    writeFileSync(file, text);
    try {
      loadConfig(file, {});
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(`${file}: ${rule}`);
    expect(message).not.toContain('\n');
  });

  it('accepts what the driver and the proxy rule read: a Unix socket URL, a password with a space, listed ranges', () => {
    for (const url of ['postgres://app:pw@/t?host=/var/run/postgresql', 'postgresql://app:p w@db.internal:5432/t']) {
      expect(validateConfig({ database: { url } }, 'config.yaml').database.url).toBe(url);
    }
    for (const trust_proxy of [
      'loopback',
      'true',
      ' false ',
      '',
      'loopback, uniquelocal,10.0.0.0/8, 192.0.2.7, ::1, fd00::/8',
    ]) {
      expect(validateConfig({ server: { trust_proxy } }, 'config.yaml').server.trust_proxy).toBe(trust_proxy);
    }
    expect(validateConfig({ server: { public_host: 'app.example.com:8443' } }, 'config.yaml').server.public_host).toBe(
      'app.example.com:8443',
    );
  });

  it.each([
    ['server.trust_proxy', { TENANTRY_SERVER_TRUST_PROXY: 'nonsense' }, TRUST_PROXY_RULE],
    [
      'database.url',
      { TENANTRY_DATABASE_URL: 'postgres://app:secret-pw@127.0.0.1:99999/t' },
      'database.url must be empty (embedded PostgreSQL) or a postgres:// URL',
    ],
  ])(
    '`node main.ts` with a %s it cannot use exits 1 with one line naming it, before reaching the database',
    (_key, env, rule) => {
      const file = join(dir, `unusable-${++counter}.yaml`);
      // An unreachable database with a secret in its URL: the refusal comes first, and names neither.
      writeFileSync(file, 'database:\n  url: postgres://app:secret-pw@127.0.0.1:1/none\n');
      const result = spawnSync(join(ROOT, 'node_modules/.bin/node'), ['main.ts', '--role', 'web', '--config', file], {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 20_000,
        env: { PATH: process.env.PATH, ...env },
      });
      expect(result.stderr).toBe(`tenantry: ${file}: ${rule}\n`);
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
    },
  );

  it('a wrong-typed secret is refused without echoing its value', () => {
    const message = refusal({ mail: { password: 123456789 } });
    expect(message).toBe('config.yaml: mail.password must be a string');
  });

  it('`node main.ts` with no config.yaml in its directory exits non-zero with that one line', () => {
    const empty = join(dir, 'no-config-here');
    mkdirSync(empty);
    const result = spawnSync(join(ROOT, 'node_modules/.bin/node'), [join(ROOT, 'main.ts')], {
      cwd: empty,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('tenantry: config.yaml: the configuration file is missing or unreadable\n');
    expect(result.stdout).toBe('');
  });

  it('`node main.ts` with an invalid config exits non-zero naming file, key and rule', () => {
    const file = join(dir, 'bad-port.yaml');
    writeFileSync(file, 'server:\n  port: -4\n');
    const result = spawnSync(join(ROOT, 'node_modules/.bin/node'), ['main.ts', '--config', file], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe(`tenantry: ${file}: server.port must be at least 0\n`);
  });
});
