import { describe, it } from 'vitest';
import { signInAs } from '../../helpers/app.ts';
import { useTestApp } from '../../helpers/use-test-app.ts';

const t = useTestApp({ role: 'all', customers: ['acme', 'globex'] });
const acmeHttp = () => t.app.http('acme.localhost');
const show = (label: string, res: { status: number; text: string; headers: Record<string, unknown> }) =>
  console.log(label, res.status, res.headers['content-type'], res.headers.location, (res.text ?? '').slice(0, 200).replace(/\s+/g, ' '));

describe('probe', () => {
  it('admin posts without a form token', async () => {
    const manager = await signInAs(t.app, t.acme, ['*']);
    const roles = async () => JSON.stringify((await acmeHttp().get('/api/v1/auth/roles').set('Cookie', manager.cookie)).body.items.find((r: { name: string }) => r.name === 'member'));
    console.log('ROLE before', await roles());
    show('JSON', await acmeHttp().post('/admin/auth/roles/member').set('Cookie', manager.cookie).send({ permissions: 'task:read' }));
    console.log('ROLE after json', await roles());
    show('NOBODY', await acmeHttp().post('/admin/auth/roles/member').set('Cookie', manager.cookie));
    console.log('ROLE after nobody', await roles());
    show('MULTIPART', await acmeHttp().post('/admin/auth/roles/member').set('Cookie', manager.cookie).field('permissions', 'user:read'));
    console.log('ROLE after multipart', await roles());
    show('LOGOUT nobody', await acmeHttp().post('/admin/logout').set('Cookie', manager.cookie));
    show('ME after', await acmeHttp().get('/api/v1/auth/me').set('Cookie', manager.cookie));
  });
});
