import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, createCustomer, signInAs, type TestApp } from '../helpers/app.ts';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await app?.close();
});

describe('generic routes of the test entity', () => {
  it('creates, reads, lists, patches and soft-deletes a widget', async () => {
    const customer = await createCustomer(app, 'acme');
    const user = await signInAs(app, customer, ['widget:read', 'widget:write']);
    const http = app.http('acme.localhost');
    const created = await http.post('/api/v1/testkit/widgets').set('Cookie', user.cookie).send({ name: 'a', size: 1, color: 'red' });
    expect(created.status).toBe(201);
    expect(created.body.approved).toBe(false);
    const id = created.body.id;
    const read = await http.get(`/api/v1/testkit/widgets/${id}`).set('Cookie', user.cookie);
    expect(read.status).toBe(200);
    const list = await http.get('/api/v1/testkit/widgets').set('Cookie', user.cookie);
    expect(list.body.total).toBe(1);
    const patched = await http.patch(`/api/v1/testkit/widgets/${id}`).set('Cookie', user.cookie).send({ size: 5 });
    expect(patched.status).toBe(200);
    expect(patched.body.size).toBe(5);
    const approve = await http.post(`/api/v1/testkit/widgets/${id}/approve`).set('Cookie', user.cookie).send({});
    expect(approve.status).toBe(200);
    expect(approve.body.approved).toBe(true);
    const del = await http.delete(`/api/v1/testkit/widgets/${id}`).set('Cookie', user.cookie);
    expect(del.status).toBe(204);
    const gone = await http.get(`/api/v1/testkit/widgets/${id}`).set('Cookie', user.cookie);
    expect(gone.status).toBe(404);
    const owned = await http.post('/api/v1/testkit/widgets').set('Cookie', user.cookie).send({ name: 'b', size: 1, color: 'red', approved: true });
    expect(owned.status).toBe(422);
    expect(owned.body.code).toBe('FIELD_COMMAND_OWNED');
  });
});
