import { randomBytes, randomInt } from 'node:crypto';
import { hashPassword } from '../../modules/user/passwords.ts';
import { send } from './http.ts';
import { assertClean, combine, hammer, percentile } from './load.ts';

export const LOGIN_PATH = '/api/v1/auth/login';

export interface Timing {
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  samples: number;
}

export function timing(values: number[]): Timing {
  const sorted = Float64Array.from(values).sort();
  const mean = values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
  return { p50_ms: percentile(sorted, 50), p99_ms: percentile(sorted, 99), mean_ms: mean, samples: values.length };
}

/** Signs in through the login route, as a client would, and returns the Cookie header to send back. */
export async function signIn(port: number, host: string, email: string, password: string): Promise<string> {
  const answer = await send(port, { method: 'POST', path: LOGIN_PATH, host, json: { email, password } });
  if (answer.status !== 200) {
    throw new Error(`POST ${LOGIN_PATH} answered ${answer.status} for the seeded user: ${answer.body.slice(0, 300)}`);
  }
  const setCookie = answer.headers['set-cookie'];
  const first = (Array.isArray(setCookie) ? setCookie : [setCookie ?? '']).find((c) => c.includes('app_session='));
  if (!first) throw new Error(`POST ${LOGIN_PATH} set no session cookie`);
  return first.split(';', 1)[0]!;
}

/** argon2id hash time with the parameters the auth module stores passwords with. */
export async function measureHash(samples: number): Promise<Timing> {
  await hashPassword('warm-up-password');
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const plain = randomBytes(12).toString('base64url');
    const started = performance.now();
    await hashPassword(plain);
    times.push(performance.now() - started);
  }
  return timing(times);
}

export interface LoginComparison {
  wrongPassword: Timing;
  unknownAddress: Timing;
}

/**
 * Failed logins, one at a time and alternating, so drifting machine load falls on both alike:
 * a wrong password for an existing account and an address nobody has (a fresh one each time).
 * The login throttle counts failures per client address (10 in 15 minutes, then 429) and slows an
 * account failing from more than three addresses, so each kind arrives through the proxy header
 * the service trusts from its own client addresses: each wrong-password account from one address,
 * at most eight failures per address; the unknown addresses likewise eight per client address.
 */
export async function measureFailedLogins(
  port: number,
  host: string,
  wrongPasswordEmails: string[],
  samples: number,
): Promise<LoginComparison> {
  const wrong: number[] = [];
  const unknown: number[] = [];
  const net = `10.${randomInt(256)}.${randomInt(256)}`;
  const attempt = async (email: string, client: string, into: number[] | undefined) => {
    const answer = await send(port, {
      method: 'POST',
      path: LOGIN_PATH,
      host,
      headers: { 'x-forwarded-for': client },
      json: { email, password: 'not-the-password-9876' },
    });
    if (answer.status !== 401)
      throw new Error(`a failed login answered ${answer.status}, not 401: ${answer.body.slice(0, 300)}`);
    into?.push(answer.ms);
  };
  const accounts = wrongPasswordEmails.length;
  const wrongPassword = (i: number, into?: number[]) =>
    attempt(wrongPasswordEmails[i % accounts]!, `${net}.${i % accounts}`, into);
  const unknownAddress = (i: number, into?: number[]) =>
    attempt(`nobody-${i}-${randomBytes(4).toString('hex')}@example.test`, `${net}.${128 + Math.floor(i / 8)}`, into);
  // Warm-up, not counted: the first of each kind pays for cold code paths.
  await wrongPassword(0);
  await unknownAddress(0);
  for (let i = 1; i <= samples; i++) {
    if (i % 2 === 0) {
      await wrongPassword(i, wrong);
      await unknownAddress(i, unknown);
    } else {
      await unknownAddress(i, unknown);
      await wrongPassword(i, wrong);
    }
  }
  return { wrongPassword: timing(wrong), unknownAddress: timing(unknown) };
}

/** The four refusals a sign-in can meet, each answered 401 ErrCredentials at what should be one cost. */
export const REFUSALS = ['wrong-password', 'unknown-address', 'invited', 'deactivated'] as const;
export type Refusal = (typeof REFUSALS)[number];

/**
 * Each of the four refusals, one of each per round, the round's order rotated so that no kind
 * always comes first, one at a time, so drifting machine load falls on all alike: a wrong password
 * for an active account, an address nobody has (a fresh one each time), an invited account (no
 * password yet) and a deactivated one (with its right password). Every kind arrives from client
 * addresses of its own through the proxy header the service trusts, each account from one address,
 * at most eight failures per address, so neither the failed-login limit nor the soft delay plays.
 */
export async function measureRefusals(
  port: number,
  host: string,
  accounts: { wrongPassword: string[]; invited: string[]; deactivated: string[]; password: string },
  samples: number,
): Promise<Record<Refusal, Timing>> {
  const base = `10.${randomInt(256)}`;
  const times: Record<Refusal, number[]> = {
    'wrong-password': [],
    'unknown-address': [],
    invited: [],
    deactivated: [],
  };
  const attempt = async (kind: Refusal, i: number, into?: number[]) => {
    const n = accounts.wrongPassword.length;
    const [email, password, client] =
      kind === 'wrong-password'
        ? [accounts.wrongPassword[i % n]!, 'not-the-password-9876', i % n]
        : kind === 'invited'
          ? [accounts.invited[i % n]!, 'not-the-password-9876', i % n]
          : kind === 'deactivated'
            ? [accounts.deactivated[i % n]!, accounts.password, i % n]
            : [
                `nobody-${i}-${randomBytes(4).toString('hex')}@example.test`,
                'not-the-password-9876',
                Math.floor(i / 8),
              ];
    const answer = await send(port, {
      method: 'POST',
      path: LOGIN_PATH,
      host,
      headers: { 'x-forwarded-for': `${base}.${REFUSALS.indexOf(kind)}.${client}` },
      json: { email, password },
    });
    if (answer.status !== 401)
      throw new Error(`a ${kind} sign-in answered ${answer.status}, not 401: ${answer.body.slice(0, 300)}`);
    into?.push(answer.ms);
  };
  // Warm-up, not counted: the first of each kind pays for cold code paths.
  for (const kind of REFUSALS) await attempt(kind, 0);
  for (let i = 1; i <= samples; i++) {
    const order = [...REFUSALS.slice(i % REFUSALS.length), ...REFUSALS.slice(0, i % REFUSALS.length)];
    for (const kind of order) await attempt(kind, i, times[kind]);
  }
  return {
    'wrong-password': timing(times['wrong-password']),
    'unknown-address': timing(times['unknown-address']),
    invited: timing(times.invited),
    deactivated: timing(times.deactivated),
  };
}

/** Accounts needed so that no address reaches the limit of ten failed logins in fifteen minutes. */
export const wrongPasswordAccountsFor = (samples: number): number => Math.ceil((samples + 1) / 8);

/**
 * Successful logins at the argon2id cost, closed loop with a few connections (the hash runs on
 * libuv's thread pool, so more connections only queue): req/s, and req/s per core of the machine.
 */
export async function measureLoginThroughput(
  port: number,
  host: string,
  email: string,
  password: string,
  seconds: number,
  connections: number,
) {
  const target = {
    url: `http://127.0.0.1:${port}${LOGIN_PATH}`,
    method: 'POST' as const,
    headers: { host, 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  };
  assertClean('login-throughput (warm-up)', await hammer(target, connections, 1));
  const sample = await hammer(target, connections, seconds);
  assertClean('login-throughput', sample);
  return combine([sample]);
}
