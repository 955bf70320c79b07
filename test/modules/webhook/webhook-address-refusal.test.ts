import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createCustomer, signInAs, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { send, type SendPolicy } from '../../../modules/webhook/send.ts';
import { refusalOf } from '../../../modules/webhook/address-check.ts';
import { startReceiver } from './receiver.ts';

// Plain http allowed, so only the address check decides; private networks not allowed.
const policy: SendPolicy = { allowHttp: true, allowPrivateNetworks: false };
let v4: Awaited<ReturnType<typeof startReceiver>>;
let v6: Awaited<ReturnType<typeof startReceiver>> | undefined;

beforeAll(async () => {
  v4 = await startReceiver('127.0.0.1');
  v6 = await startReceiver('::1').catch(() => undefined);
});
afterAll(async () => {
  await v4?.close();
  await v6?.close();
});

describe('webhook targets on private networks are refused before anything is sent', () => {
  it('refuses http://127.0.0.1, http://[::1], http://169.254.169.254, http://10.0.0.1 and a name resolving to 127.0.0.1, sending nothing', async () => {
    const targets = [
      [v4.url('/a'), 'loopback'],
      [v6 ? v6.url('/b') : 'http://[::1]/b', 'loopback'],
      ['http://169.254.169.254/latest/meta-data/', 'metadata'],
      ['http://10.0.0.1/hook', 'private'],
      [`http://localhost:${v4.port}/c`, 'loopback'],
    ] as const;
    for (const [url, what] of targets) {
      const attempt = await send(url, { 'webhook-id': 'x' }, '{}', policy);
      expect(attempt.outcome, url).toBe('refused');
      expect(attempt.outcome === 'refused' && attempt.error, url).toMatch(new RegExp(`^refused: .*${what}`));
    }
    expect(v4.received).toEqual([]);
    expect(v6?.received ?? []).toEqual([]);
    // The same receiver is reached once private networks are allowed: the refusal was the check's.
    expect(await send(v4.url('/a'), {}, '{}', { ...policy, allowPrivateNetworks: true })).toMatchObject({
      outcome: 'answered',
      status: 200,
    });
    expect(v4.received).toHaveLength(1);
  });

  it('classifies the non-public ranges, IPv4-mapped, NAT64 and 6to4 forms included, and lets public addresses through', () => {
    const refused = [
      '127.0.0.1',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '169.254.1.1',
      '224.0.0.1',
      '255.255.255.255',
      '::',
      '::1',
      'fc00::1',
      'fd12::1',
      'fe80::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      '2002:7f00:1::1',
      '::127.0.0.1',
    ];
    for (const address of refused) expect(refusalOf(address), address).toBeDefined();
    expect(refusalOf('169.254.169.254')).toBe('the cloud metadata address');
    expect(refusalOf('::ffff:127.0.0.1')).toMatch(/loopback.*IPv6 form/);
    for (const address of ['93.184.216.34', '1.1.1.1', '2606:4700:4700::1111', '::ffff:93.184.216.34', '172.32.0.1'])
      expect(refusalOf(address), address).toBeUndefined();
  });

  it('classifies every IPv6 form embedding an IPv4 address by that address, or refuses the form outright', () => {
    // Loopback, private and metadata addresses inside each form: mapped ::ffff:0:0/96, translated
    // ::ffff:0:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16; local-use NAT64 64:ff9b:1::/48, Teredo
    // 2001::/32 and the deprecated IPv4-compatible ::/96 are refused whatever they carry.
    const refused: [string, RegExp][] = [
      ['::ffff:0:127.0.0.1', /loopback address \(127\.0\.0\.1, in an IPv6 form\)/],
      ['::ffff:0:7f00:1', /loopback address \(127\.0\.0\.1, in an IPv6 form\)/],
      ['::ffff:0:a00:1', /private address \(10\.0\.0\.1, in an IPv6 form\)/],
      ['::ffff:0:a9fe:a9fe', /metadata address \(169\.254\.169\.254, in an IPv6 form\)/],
      ['::ffff:127.0.0.1', /loopback address \(127\.0\.0\.1, in an IPv6 form\)/],
      ['::ffff:c0a8:101', /private address \(192\.168\.1\.1, in an IPv6 form\)/],
      ['64:ff9b::127.0.0.1', /loopback address \(127\.0\.0\.1, in an IPv6 form\)/],
      ['64:ff9b::a00:1', /private address \(10\.0\.0\.1, in an IPv6 form\)/],
      ['64:ff9b:1::7f00:1', /local-use NAT64/],
      ['64:ff9b:1:5db8:d822:2200::', /local-use NAT64/],
      ['2002:7f00:1::1', /loopback address \(127\.0\.0\.1, in an IPv6 form\)/],
      ['2002:a9fe:a9fe::', /metadata address \(169\.254\.169\.254, in an IPv6 form\)/],
      ['2001:0:4136:e378:8000:63bf:3fff:fdd2', /Teredo/],
      ['2001::1', /Teredo/],
      ['::127.0.0.1', /IPv4-compatible/],
      ['::5db8:d822', /IPv4-compatible/],
      ['::93.184.216.34', /IPv4-compatible/],
      ['100::1', /discard/],
      ['2001:db8::1', /documentation/],
      ['fec0::1', /site-local/],
    ];
    for (const [address, why] of refused) expect(refusalOf(address), address).toMatch(why);
    // The same forms around a public IPv4 address pass, as the address would itself (classified only, never sent to).
    for (const address of ['::ffff:0:5db8:d822', '::ffff:93.184.216.34', '64:ff9b::93.184.216.34', '2002:5db8:d822::1'])
      expect(refusalOf(address), address).toBeUndefined();
  });

  it('refuses the reproduction http://[::ffff:0:127.0.0.1]:<port>/ and never attempts it', async () => {
    const port = v4.port;
    for (const url of [`http://[::ffff:0:127.0.0.1]:${port}/translated`, `http://[64:ff9b::7f00:1]:${port}/nat64`]) {
      const attempt = await send(url, { 'webhook-id': 'x' }, '{}', policy);
      expect(attempt, url).toMatchObject({ outcome: 'refused' });
      expect(attempt.outcome === 'refused' && attempt.error, url).toMatch(
        /^refused: ::ffff:0:7f00:1|^refused: 64:ff9b::7f00:1/,
      );
      expect(attempt.outcome === 'refused' && attempt.error, url).toMatch(/loopback address \(127\.0\.0\.1/);
    }
    expect(v4.at('/translated')).toEqual([]);
    expect(v4.at('/nat64')).toEqual([]);
  });

  it('refuses http:// unless webhooks.allow_http is on', async () => {
    const attempt = await send(v4.url('/plain'), {}, '{}', { allowHttp: false, allowPrivateNetworks: true });
    expect(attempt).toMatchObject({ outcome: 'refused' });
    expect(v4.at('/plain')).toEqual([]);
  });
});

describe('a refused delivery in the service', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({
      role: 'all',
      startWorker: true,
      config: testConfig({ webhooks: { allow_http: true, allow_private_networks: false, retry_base_ms: 1000 } }),
    });
  });
  afterAll(async () => {
    await app?.close();
  });

  it('fails with the reason in the endpoint’s log, is not retried, and reaches nothing', async () => {
    const acme = await createCustomer(app, 'refused-acme');
    const admin = await signInAs(app, acme, ['webhook:manage', 'task:update']);
    const host = 'refused-acme.localhost';
    const created = await app
      .http(host)
      .post('/api/v1/webhook/endpoints')
      .set('Cookie', admin.cookie)
      .send({ url: `http://localhost:${v4.port}/service`, events: ['*'] });
    expect(created.status).toBe(201);
    const test = await app
      .http(host)
      .post(`/api/v1/webhook/endpoints/${created.body.id}/send-test-event`)
      .set('Cookie', admin.cookie);
    expect(test.status).toBe(200);
    const log = await vi.waitFor(
      async () => {
        const res = await app.http(host).get('/api/v1/webhook/deliveries').set('Cookie', admin.cookie);
        expect(res.body.items.length).toBeGreaterThan(0);
        return res.body.items;
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(log[0]).toMatchObject({ status: 'refused', httpStatus: null, attempt: 1 });
    expect(log[0].error).toMatch(/^refused: localhost resolves to (127\.0\.0\.1|::1), a loopback address/);
    await new Promise((r) => setTimeout(r, 2500));
    const again = await app.http(host).get('/api/v1/webhook/deliveries').set('Cookie', admin.cookie);
    expect(again.body.items.filter((d: { event: string }) => d.event === 'webhook.test')).toHaveLength(1);
    expect(v4.at('/service')).toEqual([]);
  });
});
