import { installedProblems } from '../../framework/errors.ts';
import { describeExchange, type Answer, type Sent } from './harness.ts';

/** A stack frame, a source location or a Node internal: what a leaked exception looks like. */
const STACK_TRACE =
  /(\n\s+at\s+\S.*:\d+:\d+|node:internal|\/framework\/[\w/-]+\.ts|\/modules\/[\w/-]+\.ts|\/node_modules\/|Error: .*\n\s+at )/;
/** PostgreSQL's voice: statements, its error texts and its codes. */
const SQL_TEXT =
  /(\bselect\s.+\sfrom\s|\binsert\s+into\b|\bupdate\s+\S+\s+set\b|\bdelete\s+from\b|syntax error at or near|violates (?:foreign key|unique|check|not-null) constraint|duplicate key value|relation "[^"]*" does not exist|column "[^"]*" (?:of relation|does not exist)|invalid input syntax for|\bSQLSTATE\b|\bpg_catalog\b|current transaction is aborted)/i;

/** Why an answer is not an acceptable refusal (or an accepted 2xx), or undefined when it is fine. */
export function badAnswer(res: Answer): string | undefined {
  if (res.status >= 500) return `a ${res.status}`;
  if (STACK_TRACE.test(res.text)) return 'a stack trace in the body';
  if (SQL_TEXT.test(res.text)) return 'SQL text in the body';
  if (res.status < 400) return undefined;
  if (!/^application\/problem\+json/.test(String(res.headers['content-type'] ?? '')))
    return `a ${res.status} that is not application/problem+json (${res.headers['content-type']})`;
  const code = res.json?.code;
  // Installed by the app the suite started: the framework's codes and every module's.
  if (typeof code !== 'string' || !installedProblems().has(code))
    return `a ${res.status} without a registered code (${String(code)})`;
  if (res.json?.status !== res.status)
    return `a problem whose status (${String(res.json?.status)}) differs from the answer's (${res.status})`;
  return undefined;
}

/** Throws with the exchange when the answer is not the exact refusal. */
export function expectRefusal(req: Sent, res: Answer, status: number, code: string, rule: string): void {
  const ok =
    res.status === status &&
    /^application\/problem\+json/.test(String(res.headers['content-type'] ?? '')) &&
    res.json?.code === code;
  if (!ok) throw new Error(`${rule}: expected ${status} ${code}, got ${describeExchange(req, res)}`);
}
