import { createHmac } from 'node:crypto';
import Type, { type TSchema } from 'typebox';
import { sql } from 'kysely';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TxContext } from '../context/tx.ts';
import type { JobDefinition } from '../entity/define.ts';
import { problem } from '../errors.ts';
import { declareUniqueKeys } from '../db/unique-keys.ts';
import { routeSecrets, withholdSecrets, type SecretPath } from './withheld-secrets.ts';

/**
 * Idempotent POSTs, after Stripe's `Idempotency-Key` convention (docs/api-conventions.md,
 * "Idempotent requests"). A create or command sent with the header claims the key, for its tenant
 * and caller, in the request's own transaction, and records its answer there: the key commits
 * with the effect or not at all. A retry with the same key and request replays the recorded
 * answer; with another request it is refused. A concurrent request with the same key waits on the
 * key's primary key until the first commits (then replays it) or rolls back (then acts itself).
 * A secret the answer shows once (a response field marked Secret()) is never recorded: the stored
 * answer has null in its place, and a replay names the withheld fields in a header.
 */

/** Lower case, as Node gives request headers and as the route's headers schema must name it to validate it. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

// A conflict on the key is the wait-then-replay path, never answered as such; declared so that
// no problem document could ever name the key's index.
declareUniqueKeys({ idempotency_keys_pkey: { fields: [], detail: 'This Idempotency-Key is in use' } });

/** The replay's header naming, as JSON pointers, the secret fields it answers null (shown once, not kept). */
export const SECRETS_WITHHELD_HEADER = 'idempotent-secrets-withheld';

/** How long a key is remembered: a retry later than this acts again. */
export const KEY_LIFETIME_MS = 24 * 60 * 60_000;

/** The header as the route schemas declare it (validated like any request part, and documented in OpenAPI). */
export const idempotencyHeaders: TSchema = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[\\x20-\\x7E]+$',
      description:
        "Makes the request safe to retry: a key of 1-255 printable ASCII characters, new for each distinct request (a UUID does). For 24 hours the same key with the same request replays the first answer (its status and body, with the header Idempotent-Replayed: true) and does nothing again; with another method, path or body it answers 422 IDEMPOTENCY_KEY_REUSED. A secret the first answer showed once (a field marked x-secret, such as a webhook endpoint's signingSecret) is not kept with the answer: the replay has null in its place, and its header Idempotent-Secrets-Withheld names the fields as JSON pointers (e.g. /signingSecret). A request with the same key still running is waited for. Keys are per tenant and caller. A request that failed (any problem answer) leaves no key behind and may be retried with it.",
    }),
  ),
});

/** The key a request carries, or undefined. Its shape was validated with the route's headers. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const key = request.headers[IDEMPOTENCY_HEADER];
  return typeof key === 'string' ? key : undefined;
}

/** What an upload route read of its form (its file's format and digest), by request: see identifyUpload. */
const uploads = new WeakMap<FastifyRequest, string>();

/**
 * An upload route's body is a form the route streams (never request.body): once it has read the
 * file, it names it here (e.g. its format and SHA-256), and that stands for the body in what makes
 * two requests the same. So the same key with another file is IDEMPOTENCY_KEY_REUSED, not a replay.
 */
export function identifyUpload(request: FastifyRequest, identity: string): void {
  uploads.set(request, identity);
}

/**
 * What makes two requests "the same": method, path with query, and body (its keys in sorted order).
 * An HMAC under a key of the installation's secret (Services.requestDigestKey), not a bare digest:
 * a body may hold a password (a set-password's), which a bare SHA-256 kept in the row would let
 * anyone reading it guess at SHA-256's speed, past argon2id.
 */
export function requestHash(request: FastifyRequest, digestKey: Buffer): Buffer {
  const hash = createHmac('sha256', digestKey)
    .update(`${request.method} ${request.url}\n`)
    .update(canonicalJson(request.body ?? null));
  const upload = uploads.get(request);
  if (upload !== undefined) hash.update(`\nupload ${upload}`);
  return hash.digest();
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

interface Recorded {
  status: number;
  body: unknown;
  location: string | null;
}

/**
 * Runs the handler once per key: claims the key in the request's transaction (waiting, on the
 * primary key, for a concurrent request holding it), then either replays the answer recorded
 * under it or runs the handler and records its answer beside its effect.
 */
export async function runIdempotent(
  tx: TxContext,
  digestKey: Buffer,
  key: string,
  request: FastifyRequest,
  reply: FastifyReply,
  handler: () => Promise<unknown>,
  secrets: AnswerSecrets = routeAnswerSecrets(request),
): Promise<unknown> {
  const userId = tx.session?.userId;
  // Every idempotent route is guarded by a permission, so there is a caller; without one the key has no scope.
  if (!userId) return handler();
  const hash = requestHash(request, digestKey);
  const expired = new Date(tx.now.getTime() - KEY_LIFETIME_MS);
  // A key older than its lifetime that the purge has not reached yet is taken over as if absent.
  const claimed = await tx.db
    .insertInto('idempotency_keys')
    .values({ user_id: userId, key, request_hash: hash, created_at: tx.now })
    .onConflict((oc) =>
      oc
        .columns(['tenant_id', 'user_id', 'key'])
        .doUpdateSet({ request_hash: hash, created_at: tx.now, status: null, body: null, location: null })
        .where('idempotency_keys.created_at', '<=', expired),
    )
    .returning('key')
    .executeTakeFirst();
  if (!claimed) return replay(tx, userId, key, hash, reply, secrets);
  const result = await handler();
  const location = reply.getHeader('location');
  await tx.db
    .updateTable('idempotency_keys')
    .set({
      status: reply.statusCode,
      body: JSON.stringify(withoutSecrets(result ?? null, reply.statusCode, secrets)),
      location: typeof location === 'string' ? location : null,
    })
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .execute();
  return result;
}

/**
 * Where the secrets of an answer with this status sit (the fields its schema marks Secret()): by
 * default the route's response schema says; a batch's answer, whose parts are other routes'
 * answers, says it from the answer itself (framework/bulk/batch.ts).
 */
export type AnswerSecrets = (answer: unknown, status: number) => readonly SecretPath[];

/** The secrets of the request's own route, by its response schema of that status. */
export const routeAnswerSecrets =
  (request: FastifyRequest): AnswerSecrets =>
  (_answer, status) =>
    routeSecrets(request, status);

/** The answer as it is kept: its secret fields (Secret()) set to null, on a copy. */
function withoutSecrets(answer: unknown, status: number, secrets: AnswerSecrets): unknown {
  if (answer === null || typeof answer !== 'object') return answer;
  const paths = secrets(answer, status);
  if (paths.length === 0) return answer;
  const kept = JSON.parse(JSON.stringify(answer)) as unknown;
  withholdSecrets(kept, paths);
  return kept;
}

async function replay(
  tx: TxContext,
  userId: string,
  key: string,
  hash: Buffer,
  reply: FastifyReply,
  secrets: AnswerSecrets,
): Promise<unknown> {
  const found = await recordedAnswer(tx, userId, key, hash, reply, secrets);
  if (!found) throw new Error('an idempotency key conflicted but is not there');
  return found.body;
}

/**
 * The answer recorded under the key within its lifetime, set on the reply, or undefined: a
 * committed key of another request is refused. Used by runIdempotent after a conflict, and before
 * a prepared command's prepare step, so a retry replays without preparing again.
 */
async function recordedAnswer(
  tx: TxContext,
  userId: string,
  key: string,
  hash: Buffer,
  reply: FastifyReply,
  secrets: AnswerSecrets,
): Promise<{ body: unknown } | undefined> {
  const row = await tx.db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'status', 'body', 'location'])
    .where('user_id', '=', userId)
    .where('key', '=', key)
    .where('created_at', '>', new Date(tx.now.getTime() - KEY_LIFETIME_MS))
    .executeTakeFirst();
  if (!row || row.status === null) return undefined;
  if (!hash.equals(row.request_hash)) {
    throw problem(
      'IDEMPOTENCY_KEY_REUSED',
      'This Idempotency-Key was used for another request (method, path or body) in the last 24 hours',
      {
        extensions: { header: 'Idempotency-Key' },
      },
    );
  }
  const recorded = row as Recorded;
  reply.code(recorded.status).header('idempotent-replayed', 'true');
  if (recorded.location) reply.header('location', recorded.location);
  // Kept without its secrets (null in their place): the replay says which fields those are.
  const withheld = withholdSecrets(recorded.body, secrets(recorded.body, recorded.status));
  if (withheld.length > 0) reply.header(SECRETS_WITHHELD_HEADER, withheld.join(', '));
  return { body: recorded.body };
}

/** The recorded answer of a request carrying a key, looked up before a prepared command prepares. */
export async function earlierAnswer(
  tx: TxContext,
  digestKey: Buffer,
  key: string,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<{ body: unknown } | undefined> {
  // An upload's file is not read yet, so whether it is the same request cannot be told here: its
  // key is judged with its effect (runIdempotent), once the route has read the file (identifyUpload).
  if (/^multipart\//i.test(request.headers['content-type'] ?? '')) return undefined;
  const userId = tx.session?.userId;
  return userId
    ? recordedAnswer(tx, userId, key, requestHash(request, digestKey), reply, routeAnswerSecrets(request))
    : undefined;
}

/**
 * Whether a route takes the header: a create or command guarded by a permission, or one that
 * needs a signed-in caller (a batch, each of whose requests has its own permission): keys are per caller.
 */
export const takesIdempotencyKey = (route: { idempotent?: boolean; access: unknown }): boolean =>
  route.idempotent === true && (typeof route.access === 'object' || route.access === 'signedIn');

export const PURGE_BATCH = 1000;

/**
 * idempotency-key-purge: hourly, per tenant, deletes the keys older than 24 hours, a thousand
 * rows per transaction. A framework job: every tenant has keys, whichever modules it runs.
 */
export const idempotencyKeyPurge: JobDefinition = {
  name: 'idempotency-key-purge',
  cron: '23 * * * *',
  perTenant: true,
  async run(ctx) {
    const before = new Date(ctx.now.getTime() - KEY_LIFETIME_MS);
    let deleted = 0;
    for (;;) {
      const batch = await ctx.transaction(async (tx) => {
        const result = await tx.db
          .deleteFrom('idempotency_keys')
          // DELETE takes no LIMIT: the batch is picked by a subquery on the key (tenant by row security).
          .where(
            sql<boolean>`(user_id, key) in (${tx.db.selectFrom('idempotency_keys').select(['user_id', 'key']).where('created_at', '<=', before).limit(PURGE_BATCH)})`,
          )
          .executeTakeFirstOrThrow();
        return Number(result.numDeletedRows);
      });
      deleted += batch;
      if (batch < PURGE_BATCH) return { deleted, before: before.toISOString() };
    }
  },
};
