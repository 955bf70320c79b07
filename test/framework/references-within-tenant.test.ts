import { describe, expect, it } from 'vitest';
import { CompiledQuery } from 'kysely';
import Type from 'typebox';
import { allModules } from '../../modules/index.ts';
import { content } from '../../modules/content/content.entity.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { testConfig } from '../helpers/config.ts';
import { signInAs } from '../helpers/app.ts';
import { useTestApp } from '../helpers/use-test-app.ts';
import { defineEntity, defineModule, entity, type ModuleDefinition } from '../../framework/entity/define.ts';
import { compose } from '../../framework/composition.ts';
import { desiredTable } from '../../framework/schema/desired.ts';

/**
 * References stay inside the tenant by construction: `admin: { references: { author: 'user.user' } }` is
 * the one declaration, the table's foreign key carries tenant_id, and so the database itself refuses a
 * row naming another tenant's user, answered 422 at the field, whatever the module's hooks do.
 */

// The content entity with its hooks taken away and its author writable from the body: nothing of
// the module's own stands between the request and the table.
const unguarded = entity({ ...content, hooks: undefined, readOnly: [], readOnlyReasons: undefined } as never);
const modules: ModuleDefinition[] = [
  ...allModules.map((m) =>
    m.name === 'content' ? { ...m, entities: (m.entities ?? []).map((e) => (e === content ? unguarded : e)) } : m,
  ),
  testkitModule,
];
const INSTALLED = modules.flatMap((m) => m.entities ?? []);

describe('the foreign key a reference derives', () => {
  it('is composite between tenant-owned tables, and names a global target by its id alone', () => {
    expect(desiredTable(unguarded, INSTALLED).foreignKeys).toEqual([
      {
        name: 'contents_author_fkey',
        field: 'author',
        columns: ['tenant_id', 'author'],
        table: 'users',
        refColumns: ['tenant_id', 'id'],
      },
    ]);
    const users = INSTALLED.find((e) => e.module === 'user' && e.name === 'user')!;
    expect(desiredTable(users, INSTALLED).tenantRowKey).toBe('users_tenant_id_id_key');
    const subscription = INSTALLED.find((e) => e.name === 'subscription')!;
    expect(desiredTable(subscription, INSTALLED).foreignKeys.map((k) => [k.columns, k.table, k.refColumns])).toEqual([
      [['plan_id'], 'plans', ['id']],
      [['pending_plan_id'], 'plans', ['id']],
    ]);
  });
});

describe('boot check: a reference names a registered entity', () => {
  const module = (target: string) =>
    defineModule({
      name: 'stock',
      permissions: [
        { name: 'stock:read', description: 'Read' },
        { name: 'stock:write', description: 'Write' },
      ],
      entities: [
        entity(
          defineEntity({
            module: 'stock',
            name: 'product',
            fields: { name: Type.String(), ownerId: Type.String({ format: 'uuid' }) },
            admin: { references: { ownerId: target as `${string}.${string}` } },
            permissions: { read: 'stock:read', write: 'stock:write' },
          }),
        ),
      ],
    });
  const refusal = (target: string) => {
    try {
      compose([...allModules, module(target)], testConfig());
      return '';
    } catch (err) {
      return (err as Error).message;
    }
  };

  it('refuses a misspelt target with a line naming the declaration and the fix', () => {
    expect(refusal('user.user')).toBe('');
    expect(refusal('users.user')).toContain(
      "entity stock.product: references.ownerId names users.user, which is no registered entity: write the target as module.entity ('user.user'?), or register its module",
    );
    expect(refusal('users')).toContain(
      'entity stock.product: references.ownerId names users, which is no registered entity',
    );
  });

  it('asks for module.entity in the type', () => {
    defineEntity({
      module: 'stock',
      name: 'product',
      fields: { ownerId: Type.String({ format: 'uuid' }) },
      // @ts-expect-error a table name is not an entity's key
      admin: { references: { ownerId: 'users' } },
      permissions: { read: 'stock:read', write: 'stock:write' },
    });
  });
});

describe('another tenant’s row, with the module’s hooks out of the way', () => {
  const t = useTestApp({ modules, customers: ['acme', 'globex'] });
  const CONTENTS = '/api/v1/content/contents';
  const post = (cookie: string, author: string) =>
    t.app
      .http('acme.localhost')
      .post(CONTENTS)
      .set('Cookie', cookie)
      .send({ slug: `s-${Math.random().toString(36).slice(2, 10)}`, title: 'T', kind: 'post', body: '', author });

  it('is refused by the database itself (23503), whatever the service lets through', async () => {
    const stranger = await signInAs(t.app, t.globex, []);
    const refused = await t.app.services.transactions
      .run(t.acme, (ctx) =>
        ctx.db.executeQuery(
          CompiledQuery.raw(
            `insert into contents (slug, title, kind, body, author) values ('raw', 'T', 'post', '', $1)`,
            [stranger.userId],
          ),
        ),
      )
      .then(
        () => undefined,
        (err: { code?: string; constraint?: string }) => ({ code: err.code, constraint: err.constraint }),
      );
    expect(refused).toEqual({ code: '23503', constraint: 'contents_author_fkey' });
  });

  it('answers 422 pointing at the field on create and on PATCH; the tenant’s own user is accepted', async () => {
    const editor = await signInAs(t.app, t.acme, ['content:read', 'content:manage']);
    const stranger = await signInAs(t.app, t.globex, []);
    const own = await post(editor.cookie, editor.userId);
    expect(own.status, JSON.stringify(own.body)).toBe(201);

    const crossing = await post(editor.cookie, stranger.userId);
    expect(crossing.status, JSON.stringify(crossing.body)).toBe(422);
    expect(crossing.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(crossing.body).toMatchObject({
      code: 'VALIDATION_FAILED',
      field: 'author',
      errors: [{ pointer: '/body/author', message: 'names no user of this tenant' }],
    });

    const moved = await t.app
      .http('acme.localhost')
      .patch(`${CONTENTS}/${own.body.id}`)
      .set('Cookie', editor.cookie)
      .send({ author: stranger.userId });
    expect(moved.status, JSON.stringify(moved.body)).toBe(422);
    expect(moved.body.errors).toEqual([{ pointer: '/body/author', message: 'names no user of this tenant' }]);
  });
});
