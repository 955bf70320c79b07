import { describe, expect, it } from 'vitest';
import Type from 'typebox';
import { compose } from '../../framework/composition.ts';
import { defineEntity, defineModule, defineRoute, entity } from '../../framework/entity/define.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from '../helpers/testkit-module.ts';
import { testConfig } from '../helpers/config.ts';

/**
 * Issue 47, point 1: features and limits are declared like permissions, and the boot checks refuse
 * a name no module declares wherever a route, a command or an entity uses it.
 */
const config = testConfig();

const route = (extra: object) =>
  defineRoute({
    method: 'GET',
    url: '/api/v1/gated/thing',
    operationId: 'gated-thing-read',
    summary: 'A route',
    access: 'signedIn',
    schema: { response: { 200: Type.Object({}) } },
    handler: async () => ({}),
    ...extra,
  });

const gizmo = (extra: object) =>
  defineEntity({
    module: 'gated',
    name: 'gizmo',
    fields: { name: Type.String() },
    permissions: { read: 'gated:read', write: 'gated:read' },
    ...extra,
  });

const gated = (extra: object) =>
  defineModule({
    name: 'gated',
    permissions: [{ name: 'gated:read', description: 'Read' }],
    features: [{ name: 'gated.things', description: 'Things' }],
    limits: [{ name: 'gated.things', unit: 'things', description: 'Things', use: async () => 0 }],
    ...extra,
  });

const composeWith = (module: ReturnType<typeof gated>) => () => compose([...allModules, testkitModule, module], config);

describe('declared features and limits', () => {
  it('the modules here declare the issue’s features and limits', () => {
    const { registry } = compose([...allModules, testkitModule], config);
    expect([...registry.features.keys()]).toEqual(expect.arrayContaining(['webhook.endpoints', 'file.public_links']));
    expect([...registry.limits.keys()].sort()).toEqual([
      'file.storage_bytes',
      'token.active',
      'user.seats',
      'webhook.endpoints',
    ]);
    expect(registry.limits.get('user.seats')).toMatchObject({ unit: 'seats', module: 'user' });
  });

  it('a declared name used by a route, a command and an entity boots', () => {
    const ok = gated({
      routes: [route({ feature: 'gated.things' })],
      entities: [entity(gizmo({ feature: 'gated.things', limit: 'gated.things' }))],
    });
    expect(composeWith(ok)).not.toThrow();
  });

  it('refuses a route gated by an undeclared feature', () => {
    expect(composeWith(gated({ routes: [route({ feature: 'gated.nothing' })] }))).toThrow(
      /route GET \/api\/v1\/gated\/thing \(module gated\) is gated by undeclared feature gated\.nothing/,
    );
  });

  it('refuses an entity gated by an undeclared feature or counting an undeclared limit', () => {
    expect(composeWith(gated({ entities: [entity(gizmo({ feature: 'gated.nothing' }))] }))).toThrow(
      /entity gated\.gizmo is gated by undeclared feature gated\.nothing/,
    );
    expect(composeWith(gated({ entities: [entity(gizmo({ limit: 'gated.nothing' }))] }))).toThrow(
      /entity gated\.gizmo counts undeclared limit gated\.nothing/,
    );
  });

  it('refuses a command gated by an undeclared feature', () => {
    const withCommand = gizmo({
      commands: { poke: { summary: 'Poke', feature: 'gated.nothing', run: async () => undefined } },
    });
    expect(composeWith(gated({ entities: [entity(withCommand)] }))).toThrow(
      /command poke of entity gated\.gizmo is gated by undeclared feature gated\.nothing/,
    );
  });

  it('refuses a public route gated by a feature, and a feature declared twice', () => {
    expect(composeWith(gated({ routes: [route({ feature: 'gated.things', access: 'public' })] }))).toThrow(
      /is public and gated by feature gated\.things/,
    );
    expect(
      composeWith(
        gated({
          features: [
            { name: 'gated.things', description: 'a' },
            { name: 'gated.things', description: 'b' },
          ],
        }),
      ),
    ).toThrow(/feature gated\.things is declared twice/);
  });

  it('refuses billing.default_entitlements naming an undeclared feature or limit, one line each with the fix', () => {
    const configured = testConfig({
      billing: {
        default_entitlements: { features: ['webhook.endpoints', 'api.access'], limits: { 'user.chairs': 3 } },
      },
    });
    let message = '';
    try {
      compose([...allModules, testkitModule], configured);
    } catch (err) {
      message = (err as Error).message;
    }
    const lines = message.split('\n').filter((line) => line.includes('billing.default_entitlements'));
    expect(lines).toEqual([
      expect.stringMatching(
        /^- billing\.default_entitlements\.features names api\.access, which no module declares: remove it from config\.yaml, or declare it in a module's features \(declared: .*webhook\.endpoints/,
      ),
      expect.stringMatching(
        /^- billing\.default_entitlements\.limits names user\.chairs, which no module declares: remove it from config\.yaml, or declare it in a module's limits \(declared: .*user\.seats/,
      ),
    ]);
    // Declared names, and '*' for every feature, boot.
    const declared = testConfig({
      billing: { default_entitlements: { features: ['*', 'webhook.endpoints'], limits: { 'user.seats': 3 } } },
    });
    expect(() => compose([...allModules, testkitModule], declared)).not.toThrow();
  });
});
