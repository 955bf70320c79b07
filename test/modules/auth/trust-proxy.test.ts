import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCustomer, startTestApp, type TestApp } from '../../helpers/app.ts';
import { testConfig } from '../../helpers/config.ts';
import { trustProxySetting } from '../../../framework/http/web.ts';
import { addUser } from './fixtures.ts';

describe('server.trust_proxy decides who may name the client address the limits count', () => {
  it('maps the setting to fastify: words to booleans, anything else to a proxy list', () => {
    expect(trustProxySetting('false')).toBe(false);
    expect(trustProxySetting('')).toBe(false);
    expect(trustProxySetting('true')).toBe(true);
    expect(trustProxySetting('loopback')).toBe('loopback');
    expect(trustProxySetting('10.0.0.0/8, 127.0.0.1')).toBe('10.0.0.0/8, 127.0.0.1');
    expect(testConfig().server.trust_proxy).toBe('loopback');
  });

  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ config: testConfig({ server: { trust_proxy: 'false' } }) });
    await createCustomer(app, 'proxied');
  });
  afterAll(async () => {
    await app?.close();
  });

  it('with false, a forged X-Forwarded-For does not escape the failed-login limit', async () => {
    const user = await addUser(app, (await app.services.hosts.resolve('proxied.localhost'))!);
    for (let i = 0; i < 10; i++) {
      const res = await app
        .http('proxied.localhost')
        .post('/api/v1/auth/login')
        .set('X-Forwarded-For', `203.0.113.${i + 1}`)
        .send({ email: user.email, password: 'wrong password' });
      expect(res.status).toBe(401);
    }
    const refused = await app
      .http('proxied.localhost')
      .post('/api/v1/auth/login')
      .set('X-Forwarded-For', '203.0.113.99')
      .send({ email: user.email, password: user.password });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('ErrTooManyAttempts');
  });
});
