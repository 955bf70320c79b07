import { describe, expect, it } from 'vitest';
import { signInAs } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';
import { CHEAP_ARGON2_OPTIONS, cheapPasswordHasher } from '../../helpers/cheap-password-hasher.ts';
import { argon2Hasher } from '../../../framework/access/password-verifier.ts';
import { ARGON2_OPTIONS } from '../../../modules/user/passwords.ts';
import { storedUser } from '../user/support.ts';

// The security suite's worlds boot their app with the cheap test hasher. Their logins must still
// mean something: a password set through the API is stored as a real argon2id hash (at the cheap
// cost, so the world's app did use it), the right password signs in, and a wrong one is refused.

const t = useTestApp({ customers: ['acme'], passwordHasher: cheapPasswordHasher });

describe('an app given the cheap test hasher', () => {
  it('stores a real argon2id hash at the cheap cost, signs in with the right password and refuses a wrong one', async () => {
    const manager = await signInAs(t.app, t.acme, ['user:read', 'user:manage']);
    const http = t.app.http('acme.localhost');
    const invited = await http
      .post('/api/v1/user/invitations')
      .set('Cookie', manager.cookie)
      .send({ email: 'ann@acme.test' });
    expect(invited.status).toBe(201);
    const set = await http
      .post(`/api/v1/user/users/${invited.body.id}/set-password`)
      .set('Cookie', manager.cookie)
      .send({ password: 'the right password' });
    expect(set.status).toBeLessThan(300);

    expect((await storedUser(t.app, t.acme, invited.body.id))?.password_hash).toMatch(
      new RegExp(
        `^\\$argon2id\\$v=19\\$m=${CHEAP_ARGON2_OPTIONS.memoryCost},p=1,t=${CHEAP_ARGON2_OPTIONS.timeCost}\\$`,
      ),
    );

    const login = (password: string) => http.post('/api/v1/auth/login').send({ email: 'ann@acme.test', password });
    expect((await login('the right password')).status).toBe(200);
    const refused = await login('the wrong password');
    expect(refused.status).toBe(401);
  });

  it('leaves the product hasher at its production cost', async () => {
    expect(ARGON2_OPTIONS).toMatchObject({ memoryCost: 19456, timeCost: 2, parallelism: 1 });
    expect(await argon2Hasher.hash('anything at all')).toMatch(/^\$argon2id\$v=19\$m=19456,p=1,t=2\$/);
  });
});
