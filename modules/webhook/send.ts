import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { checkedTarget } from './address-check.ts';
import { urlRefusal, type SendPolicy } from './target-url.ts';

export type { SendPolicy } from './target-url.ts';

/** The whole attempt, from the lookup to the end of the answer. */
export const TOTAL_TIMEOUT_MS = 10_000;
/** From the socket's creation to its connection. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** The receiver's answer is read (and dropped) up to this many bytes. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** What one attempt did: refused (never sent), answered with a status, or failed on the way. */
export type Attempt =
  | { outcome: 'refused'; error: string; durationMs: number }
  | { outcome: 'answered'; status: number; durationMs: number }
  | { outcome: 'failed'; error: string; durationMs: number };

/**
 * POSTs the body to the URL: the URL checked as at the endpoint's create (urlRefusal: scheme,
 * authority, a literal address), the host resolved once and its addresses checked (checkedTarget), the connection made to the checked address (the request's `lookup`
 * answers it, so no second resolution happens), no redirect followed (a 3xx is an answer like any
 * other non-2xx), 5 s to connect and 10 s in all.
 */
export async function send(
  url: string,
  headers: Record<string, string>,
  body: string,
  policy: SendPolicy,
): Promise<Attempt> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const refused = urlRefusal(url, policy);
  if (refused) return { outcome: 'refused', error: `refused: ${refused}`, durationMs: elapsed() };
  const target = new URL(url);
  const signal = AbortSignal.timeout(TOTAL_TIMEOUT_MS);
  const checked = await checkedTarget(target.hostname, policy.allowPrivateNetworks);
  if (!checked.ok) return { outcome: 'refused', error: checked.reason, durationMs: elapsed() };
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if (options.all)
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
        { address: checked.address, family: checked.family },
      ]);
    else callback(null, checked.address, checked.family);
  };
  const client = target.protocol === 'https:' ? https : http;
  return await new Promise<Attempt>((resolve) => {
    let settled = false;
    const finish = (attempt: Attempt) => {
      if (settled) return;
      settled = true;
      resolve(attempt);
    };
    const request = client.request(
      target,
      {
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'Tenantry-Webhooks',
        },
        lookup: pinned,
        agent: false,
        signal,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        let read = 0;
        let dropped = false;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) {
            dropped = true;
            response.destroy();
          }
        });
        const answered = () => finish({ outcome: 'answered', status, durationMs: elapsed() });
        // An answer counts once it has arrived whole (or its first 64 KiB, the rest being dropped):
        // a status followed by a cut connection or a stalled body is no answer, so not a success.
        const ended = () => {
          if (response.complete || dropped) return answered();
          const error = signal.aborted
            ? `no answer within ${TOTAL_TIMEOUT_MS / 1000} s`
            : `the answer (status ${status}) was cut short before its end`;
          finish({ outcome: 'failed', error, durationMs: elapsed() });
        };
        response.on('end', answered);
        response.on('close', ended);
        response.on('error', ended);
      },
    );
    request.on('socket', (socket) => {
      const timer = setTimeout(
        () => request.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS / 1000} s`)),
        CONNECT_TIMEOUT_MS,
      );
      socket.once('connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
    request.on('error', (err) => {
      const message = signal.aborted ? `no answer within ${TOTAL_TIMEOUT_MS / 1000} s` : err.message;
      finish({ outcome: 'failed', error: message, durationMs: elapsed() });
    });
    request.end(body);
  });
}
