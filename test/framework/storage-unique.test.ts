import { describe, expect, it } from 'vitest';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { entityUniqueKeys } from '../../framework/entity/unique-keys.ts';

/**
 * Issue 50, point 3: `storage.unique` declares a unique key once, its field and its 409 sentence
 * with it; nothing is declared by hand beside it (declareUniqueKeys is for tables that are no
 * entity's). The test kit's widget declares `unique: ['name']` and nothing else: a taken name
 * answers 409 naming the field, in the default words.
 */
const t = useTestApp({ customers: ['uniq'] });
const HOST = 'uniq.localhost';

describe('storage.unique is the one declaration of a unique key', () => {
  it('a taken value answers 409 ALREADY_EXISTS pointing at the field, in the default sentence', async () => {
    const who = await signInAs(t.app, t.uniq, ['widget:read', 'widget:write']);
    const post = () =>
      t.app
        .http(HOST)
        .post('/api/v1/testkit/widgets')
        .set('Cookie', who.cookie)
        .send({ name: 'Sprocket', size: 1, color: 'red' });
    expect((await post()).status).toBe(201);
    const again = await post();
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      code: 'ALREADY_EXISTS',
      detail: 'A widget with this name already exists',
      field: 'name',
      errors: [{ pointer: '/body/name', message: 'is already used' }],
    });
    expect(JSON.stringify(again.body)).not.toContain('widgets_name_unique');
  });

  it('derives each key from the entity: the index name the generator gives it, the field, the declared message', () => {
    const user = t.app.services.registry.entities.find((e) => e.names.key === 'user.user')!;
    expect(entityUniqueKeys(user)).toEqual({
      users_email_unique: { fields: ['email'], detail: 'A user with this address already exists in the tenant' },
    });
    const widget = t.app.services.registry.entities.find((e) => e.names.key === 'testkit.widget')!;
    expect(entityUniqueKeys(widget)).toEqual({
      widgets_name_unique: { fields: ['name'], detail: 'A widget with this name already exists' },
    });
  });
});
