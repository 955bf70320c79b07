import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config/schema.ts';
import type { Db } from './db/pool.ts';
import type { TenantTransactions } from './context/tx.ts';
import type { HostResolver } from './context/host-cache.ts';
import type { PublicReadCache } from './context/public-read-cache.ts';
import type { Registry } from './entity/registry.ts';
import type { Mailer } from './mail/mailer.ts';
import type { Clock } from './clock.ts';
import type { Metrics } from './observability/metrics.ts';
import type { PasswordVerifier } from './access/password-verifier.ts';
import type { CursorSeal } from './operations/cursor.ts';
import type { LiveHub } from './live/hub.ts';

/** Shared process-wide services handed to handlers, commands, subscriptions and jobs. */
export interface Services {
  config: Config;
  db: Db;
  transactions: TenantTransactions;
  hosts: HostResolver;
  /** Current ETags of publicly readable rows, evicted on every write (framework/context/public-read-cache.ts). */
  publicReads: PublicReadCache;
  registry: Registry;
  mailer: Mailer;
  log: FastifyBaseLogger;
  /** The time every business decision compares with (see framework/clock.ts). */
  clock: Clock;
  /** Checks a password against its stored argon2 hash (see framework/access/password-verifier.ts). */
  passwordVerifier: PasswordVerifier;
  /** Signs list cursors and checks them, with a key from the installation's secret (operations/cursor.ts). */
  cursors: CursorSeal;
  /** The open streams of live changes (framework/live/hub.ts): served by a web process once started. */
  live: LiveHub;
  /** The Prometheus series, when metrics.port is set (framework/observability/metrics.ts); absent, nothing is counted. */
  metrics?: Metrics;
}
