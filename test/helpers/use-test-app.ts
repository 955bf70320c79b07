import { afterAll, beforeAll } from 'vitest';
import type { TenantRef } from '../../framework/context/tenant.ts';
import { createCustomer, startTestApp, type TestApp, type TestAppOptions } from './app.ts';

/** A test file's app and its customer tenants, each readable once the file's beforeAll has run. */
export type TestAppFixture<C extends string> = { readonly app: TestApp } & { readonly [K in C]: TenantRef };

/**
 * The set-up most test files share, in one line: starts the app (startTestApp, with these options)
 * before the file's tests, creates the named customer tenants (each with its host
 * `<slug>.localhost`, createCustomer), and closes the app after the tests.
 *
 *   const t = useTestApp({ customers: ['acme', 'globex'] });
 *   it('...', async () => { await signInAs(t.app, t.acme, ['task:read']); });
 *
 * Call it at the top of the file (it registers beforeAll and afterAll). Reading `t.app` or a
 * customer before beforeAll has run (at the file's top level) throws, naming what was read.
 */
export function useTestApp<const C extends string = never>(
  options: TestAppOptions & { customers?: readonly C[] } = {},
): TestAppFixture<C> {
  const { customers = [], ...appOptions } = options;
  let app: TestApp | undefined;
  const tenants = new Map<string, TenantRef>();
  beforeAll(async () => {
    app = await startTestApp(appOptions);
    for (const slug of customers) tenants.set(slug, await createCustomer(app, slug));
  });
  afterAll(async () => {
    await app?.close();
  });
  const fixture = {} as Record<string, unknown>;
  const unready = (name: string) =>
    new Error(`useTestApp: ${name} is read before the file's beforeAll ran; read it inside a test or hook`);
  Object.defineProperty(fixture, 'app', {
    get: () =>
      app ??
      (() => {
        throw unready('app');
      })(),
    enumerable: true,
  });
  for (const slug of customers) {
    Object.defineProperty(fixture, slug, {
      get: () =>
        tenants.get(slug) ??
        (() => {
          throw unready(`customer ${slug}`);
        })(),
      enumerable: true,
    });
  }
  return fixture as TestAppFixture<C>;
}
