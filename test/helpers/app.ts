import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { CompiledQuery } from 'kysely';
import { buildApp, migrationSources, type App, type Role } from '../../framework/app.ts';
import type { ModuleDefinition } from '../../framework/entity/define.ts';
import type { Config } from '../../framework/config/schema.ts';
import type { TenantRef } from '../../framework/context/tenant.ts';
import type { Mailer } from '../../framework/mail/mailer.ts';
import type { Clock } from '../../framework/clock.ts';
import type { PasswordHasher, PasswordVerifier } from '../../framework/access/password-verifier.ts';
import { createTenant } from '../../framework/tenancy/create-tenant.ts';
import { hashSecret, newSessionId, sessionCookie } from '../../framework/access/session-cookie.ts';
import { allModules } from '../../modules/index.ts';
import { testkitModule } from './testkit-module.ts';
import { createMigratedTestDatabase } from './database.ts';
import { testConfig } from './config.ts';
import { hostAgent, type HostAgent } from './inject-agent.ts';

export const OPERATOR_HOST = 'operator.localhost';

export interface TestApp extends App {
  databaseUrl: string;
  config: Config;
  operator: TenantRef;
  /**
   * supertest's interface to the app, through fastify's inject (inject-agent.ts), with the Host
   * header of the given host (default: the operator's).
   */
  http(host?: string): HostAgent;
}

export interface TestAppOptions {
  modules?: readonly ModuleDefinition[];
  config?: Config;
  role?: Role;
  databaseUrl?: string;
  startWorker?: boolean;
  mailer?: Mailer;
  /** Captures the service's log (defaults to a silent logger). */
  logger?: FastifyBaseLogger;
  /** The app's clock (defaults to the system clock); a SettableClock moves time for a test. */
  clock?: Clock;
  /** The app's password verifier (defaults to argon2's): a test counts verifications through its own. */
  passwordVerifier?: PasswordVerifier;
  /** The app's password hasher (defaults to argon2id's): a test watches where hashing runs through its own. */
  passwordHasher?: PasswordHasher;
}

/**
 * Builds the app with the installation's modules plus the test kit (or the given modules) on a
 * database of its own, copied from the run's migrated template (or on a given database).
 */
export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const modules = options.modules ?? [...allModules, testkitModule];
  const databaseUrl = options.databaseUrl ?? (await createMigratedTestDatabase(migrationSources(modules)));
  const config = options.config ?? testConfig();
  const app = await buildApp({
    config,
    modules,
    databaseUrl,
    role: options.role ?? 'web',
    startWorker: options.startWorker ?? false,
    scheduleJobs: false,
    ...(options.mailer ? { mailer: options.mailer } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.passwordVerifier ? { passwordVerifier: options.passwordVerifier } : {}),
    ...(options.passwordHasher ? { passwordHasher: options.passwordHasher } : {}),
  });
  await app.web?.ready();
  const { rows } = await app.services.db.pool.query<{ id: string; slug: string }>(
    'select id, slug from tenants where is_operator',
  );
  const operator = { id: rows[0]!.id, slug: rows[0]!.slug, isOperator: true };
  return { ...app, databaseUrl, config, operator, http: (host = OPERATOR_HOST) => hostAgent(app.web!, host) };
}

/** Creates a customer tenant with one primary host, as the tenant module would. */
export async function createCustomer(app: TestApp, slug: string, host = `${slug}.localhost`): Promise<TenantRef> {
  return app.services.transactions.run(app.operator, (ctx) =>
    createTenant(ctx, app.services, { slug, name: `Customer ${slug}`, host }),
  );
}

export interface SignedIn {
  userId: string;
  email: string;
  cookie: string;
  rawSessionId: string;
}

/**
 * Inserts an active user holding a role with exactly these permissions, and a session for them,
 * straight into the tenant's tables; returns the Cookie header value a client would send.
 */
export async function signInAs(
  app: TestApp,
  tenant: TenantRef,
  permissions: string[],
  options: { email?: string } = {},
): Promise<SignedIn> {
  const email = options.email ?? `${randomUUID().slice(0, 8)}@example.test`;
  const role = `r${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const rawSessionId = newSessionId();
  const userId = await app.services.transactions.run(tenant, async (ctx) => {
    await ctx.db.executeQuery(
      CompiledQuery.raw('insert into roles (name, permissions) values ($1, $2)', [role, permissions]),
    );
    const user = await ctx.db.executeQuery<{ id: string }>(
      CompiledQuery.raw(
        `insert into users (email, display_name, status, roles) values ($1, $2, 'active', $3) returning id`,
        [email, 'Test User', [role]],
      ),
    );
    const id = user.rows[0]!.id;
    await ctx.db.executeQuery(
      CompiledQuery.raw(
        `insert into sessions (id_hash, user_id, expires_at) values ($1, $2, now() + interval '30 days')`,
        [hashSecret(rawSessionId), id],
      ),
    );
    return id;
  });
  const { name } = sessionCookie(app.config);
  return { userId, email, rawSessionId, cookie: `${name}=${rawSessionId}` };
}
