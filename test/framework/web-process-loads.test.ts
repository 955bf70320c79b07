import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadedWith } from '../helpers/import-graph.ts';

/**
 * A web process holds only the code it runs (issue 45: its RSS with 2,000 streams open is bounded,
 * and what it holds idle leaves the streams less room). The job queue (pg-boss, through the
 * worker) is loaded by the roles that work, the S3 SDK when files.storage is s3, and the SMTP
 * transport (nodemailer) when mail.host is set, and the Prometheus client (prom-client) when
 * metrics.port is set, each by a dynamic import at boot (framework/app.ts, framework/storage/index.ts,
 * framework/mail/mailer.ts); the service's entry point reaches none of them by a static import.
 */
const ROOT = resolve(import.meta.dirname, '../..');
// main.ts loads the service by dynamic imports at its top level, made at every start (framework/compile-cache.ts).
const service = loadedWith(ROOT, 'main.ts', { entryDynamic: true });
const LOADED_BY_ROLE_OR_DRIVER = ['pg-boss', '@aws-sdk/client-s3', '@aws-sdk/lib-storage', 'nodemailer', 'prom-client'];

describe('what a process loads at start', () => {
  it('follows the imports of the whole service', () => {
    expect(service.files.has('framework/app.ts')).toBe(true);
    expect(service.files.has('framework/live/hub.ts')).toBe(true);
    expect([...service.packages]).toEqual(expect.arrayContaining(['fastify', 'kysely', 'typebox']));
    // The worker and the S3 store do import them: reaching either file statically would load them.
    expect(loadedWith(ROOT, 'framework/events/worker.ts').packages.has('pg-boss')).toBe(true);
    expect(loadedWith(ROOT, 'framework/storage/s3.ts').packages.has('@aws-sdk/client-s3')).toBe(true);
    expect(service.files.has('framework/mail/mailer.ts')).toBe(true);
    expect(loadedWith(ROOT, 'framework/observability/metrics.ts').packages.has('prom-client')).toBe(true);
  });

  it('a web process loads neither the job queue, nor the S3 SDK, nor the SMTP transport, nor the metrics client by a static import', () => {
    expect(service.files.has('framework/events/worker.ts')).toBe(false);
    expect(service.files.has('framework/observability/metrics.ts')).toBe(false);
    expect(service.files.has('framework/storage/s3.ts')).toBe(false);
    expect([...service.packages].filter((p) => LOADED_BY_ROLE_OR_DRIVER.includes(p))).toEqual([]);
  });
});
