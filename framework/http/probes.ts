import type { FastifyInstance } from 'fastify';
import type { Services } from '../services.ts';
import type { ReadinessCheck } from '../contracts/admin.ts';
import Type from 'typebox';
import { PROBLEM_CONTENT_TYPE } from './problems.ts';
import { problemResponse } from '../openapi/problem-schema.ts';
import { problemType } from '../errors.ts';
import { storageCheck } from '../storage/index.ts';
import { deadLetterSummary } from '../events/dead-letters.ts';

export type { ReadinessCheck } from '../contracts/admin.ts';

export function databaseCheck(services: Services): ReadinessCheck {
  return {
    name: 'database',
    check: async () => {
      await services.db.pool.query('select 1');
    },
  };
}

/**
 * Runs every check in order (so /ready and the admin health page report them all); each is bounded
 * so a hung dependency cannot hang /ready. The first failure is the one /ready names.
 */
export async function runReadiness(
  checks: readonly ReadinessCheck[],
  timeoutMs = 2000,
): Promise<{ name: string; ok: boolean; error?: string }[]> {
  const results: { name: string; ok: boolean; error?: string }[] = [];
  for (const c of checks) {
    try {
      await Promise.race([
        c.check(),
        new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), timeoutMs).unref()),
      ]);
      results.push({ name: c.name, ok: true });
    } catch (err) {
      results.push({ name: c.name, ok: false, error: (err as Error).message || 'failed' });
    }
  }
  return results;
}

const CheckList = Type.Array(Type.Object({ name: Type.String(), ok: Type.Boolean() }));

/** Dead letters are reported, never a reason to fail readiness: the service still serves. */
const DeadLetters = Type.Object(
  {
    count: Type.Integer({ minimum: 0 }),
    lastError: Type.Union([Type.String(), Type.Null()]),
    lastFailedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  {
    description:
      'Deliveries and job runs that spent their retries (npm run dead-letters -- list); absent when the database cannot be read',
  },
);

export const HEALTH_SCHEMA = {
  operationId: 'system-health-read',
  summary: 'Liveness: answers while the process serves, whatever the checks say',
  description: 'Answers on any Host: load balancers probe by address.',
  tags: ['probes'],
  security: [],
  'x-access': 'public',
  response: { 200: Type.Object({ status: Type.Literal('ok') }, { description: 'The process is up' }) },
};

export const READY_SCHEMA = {
  operationId: 'system-readiness-read',
  summary: 'Readiness: runs the registered checks, the database first',
  description:
    "Answers on any Host. 503 names the first failing check; the reason is only logged. 200 also reports the dead letters (how many, and the latest one's error), which never fail readiness.",
  tags: ['probes'],
  security: [],
  'x-access': 'public',
  response: {
    200: Type.Object(
      { status: Type.Literal('ready'), checks: CheckList, deadLetters: Type.Optional(DeadLetters) },
      { description: 'Every check passed' },
    ),
    503: problemResponse('NOT_READY: `check` names the failing check'),
  },
};

/** The checks /ready runs, the database first, then the file storage; the admin health page shows this same list. */
export function readinessChecks(services: Services, extra: readonly ReadinessCheck[]): ReadinessCheck[] {
  return [databaseCheck(services), storageCheck(services.config), ...extra];
}

/** /health and /ready answer on any host: load balancers probe by address, not by tenant host. */
export function registerProbes(app: FastifyInstance, services: Services, checks: readonly ReadinessCheck[]): void {
  app.get('/health', { schema: HEALTH_SCHEMA }, async () => ({ status: 'ok' }));
  app.get('/ready', { schema: READY_SCHEMA }, async (request, reply) => {
    const results = await runReadiness(checks);
    const failed = results.find((r) => !r.ok);
    if (!failed) {
      const deadLetters = await deadLetterSummary(services.db).catch(
        (err: unknown) => void request.log.warn({ err }, 'readiness: dead letters unreadable'),
      );
      return {
        status: 'ready',
        checks: results.map((r) => ({ name: r.name, ok: true })),
        ...(deadLetters
          ? { deadLetters: { ...deadLetters, lastFailedAt: deadLetters.lastFailedAt?.toISOString() ?? null } }
          : {}),
      };
    }
    // The reason goes to the log only: a probe answers anyone who can reach the address.
    request.log.warn({ check: failed.name, error: failed.error }, 'readiness check failed');
    return reply
      .code(503)
      .type(PROBLEM_CONTENT_TYPE)
      .send({
        type: problemType('NOT_READY'),
        title: 'Not ready',
        status: 503,
        detail: `check ${failed.name} failed`,
        code: 'NOT_READY',
        check: failed.name,
        checks: results.map((r) => ({ name: r.name, ok: r.ok })),
        requestId: request.id,
      });
  });
}
