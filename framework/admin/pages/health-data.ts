import { runReadiness, type ReadinessCheck } from '../../http/probes.ts';

/** What one readiness check answered, as the health page shows it. */
export interface CheckOutcome {
  name: string;
  ok: boolean;
  /** How long the check took, in milliseconds. */
  ms: number;
  /** Why it failed: logged, and shown only to the operator (a probe's reason may name internals). */
  error?: string;
}

/** The check of that name, or undefined: the fragment URL names a check by its name. */
export function findCheck(checks: readonly ReadinessCheck[], name: string): ReadinessCheck | undefined {
  return checks.find((c) => c.name === name);
}

/**
 * Runs one check as /ready runs it (bounded by the same timeout). Checks reach the pool: call this
 * with no transaction open.
 */
export async function runCheck(check: ReadinessCheck): Promise<CheckOutcome> {
  const started = performance.now();
  const [result] = await runReadiness([check]);
  const ms = Math.round(performance.now() - started);
  return { name: check.name, ok: result!.ok, ms, ...(result!.error ? { error: result!.error } : {}) };
}
