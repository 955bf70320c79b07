import type { FastifyInstance, FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Services } from '../services.ts';
import { ProblemSchema } from './problem-schema.ts';
import { sessionCookie } from '../access/session-cookie.ts';
import { API_PREFIX } from '../entity/names.ts';
import { operatorUrl } from '../tenancy/first-administrator.ts';
import { isLocalHost } from '../config/rules.ts';
import { normaliseHost } from '../context/tenant.ts';
import { nameSchemas } from './named-schemas.ts';
import { PREFER_HEADER, REPLICA_PREFERENCE } from '../http/replica-choice.ts';

export const OPENAPI_PATH = `${API_PREFIX}/openapi.json`;
export const DOCS_PATH = `${API_PREFIX}/docs`;

/** The OpenAPI 3.1 document is built by @fastify/swagger from the very route schemas we register. */
export async function registerOpenApi(app: FastifyInstance, services: Services): Promise<void> {
  app.addSchema(ProblemSchema);
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tenantry API',
        version: '1.0.0',
        description: [
          'Multi-tenant back end. The tenant comes from the Host header; an unknown host answers 404 NO_SITE.',
          'Failures are application/problem+json with a stable `code`.',
          'Bodies are JSON, validated as sent: an unknown member is 422 VALIDATION_FAILED. An operation that lists no requestBody takes none: a body with any member, or any other JSON value, is 422 VALIDATION_FAILED (no body, or `{}`, is none). An id in the path that is not a UUID, or holds a NUL character, is the same 404 NOT_FOUND as an unknown one.',
          'Lists take `limit` (1-100, default 20), `offset` (0-10000, default 0), `sort` (one or several fields separated by commas, "-" prefix for descending; ties break on id) and `after` (the previous page\'s `next`, for keyset paging at any depth), all optional, and answer `{ items, total, totalExact, limit, offset, next }`: `total` is counted up to 10000 (`totalExact` false past that), `next` is null on the last page.',
          'Lists that take the query language (every generated list, notifications, files) filter by `<field>=<operator>.<value>` (one parameter per filterable field, its operators in its description), take one `or=(...)` group, `fields` (the fields each item keeps) and `expand` (a referenced row in each item); reads by id take `fields` and `expand` too. At most 20 conditions; a refused parameter is 422 VALIDATION_FAILED naming what it accepts.',
          'Not signed in: 401 AUTH_REQUIRED. Signed in without the permission: 403 AUTH_FORBIDDEN.',
        ].join('\n\n'),
        // package.json says UNLICENSED (npm's word for proprietary); SPDX names an unlisted license LicenseRef-*.
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      },
      servers: [serverOf(services.config.server.public_host, services.config.server.port)],
      components: {
        securitySchemes: {
          cookieAuth: {
            type: 'apiKey',
            in: 'cookie',
            name: sessionCookie(services.config).name,
            description:
              'The session cookie set by login. Non-browser clients send the Set-Cookie value back as a Cookie header.',
          },
          bearerAuth: {
            type: 'http',
            scheme: 'bearer',
            description: [
              "A personal access token (POST /api/v1/auth/tokens), sent as Authorization: Bearer <token>. It acts for the user who made it, on that user's tenant only (another host answers 401 TOKEN_INVALID), with the token's permissions intersected with the user's current ones (403 AUTH_FORBIDDEN beyond them).",
              'An unknown, expired or revoked token, or one whose user is deactivated, is 401 TOKEN_INVALID; failed attempts count towards the per-address sign-in limit (429 ErrTooManyAttempts with Retry-After). A request with a token is not subject to the cross-site rule and its cookie is not read. Operations that take only cookieAuth ignore the header.',
            ].join(' '),
          },
        },
      },
    },
    // Named bodies and answers, then what every operation shares (see finishDocument).
    transformObject: (built) =>
      ('openapiObject' in built
        ? finishDocument(nameSchemas(built.openapiObject as Record<string, unknown>))
        : built.swaggerObject) as never,
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  // The docs page reads its document at <docs>/json: served with the asking host as the default,
  // so "Try it out" on a customer's host calls that customer, not the operator. A shallow copy
  // with other servers: the document itself is built once.
  await app.register(swaggerUi, {
    routePrefix: DOCS_PATH,
    transformSpecificationClone: false,
    transformSpecification: (document, request) => withServerOfRequest(document, request),
  });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async (request) =>
    withServerOfRequest(openApiDocument(app), request),
  );
}

/**
 * Every tenant serves the same paths on its own host, so the server is a template whose host
 * defaults to server.public_host (the operator tenant's): https, as behind the TLS proxy a public
 * host sits behind, or http on a local name (with the listening port when public_host names none).
 * That is the exported document's (openapi/snapshot.json, a generated client's); the served
 * copies default to the host they are asked on (withServerOfRequest).
 */
function serverOf(publicHost: string, port: number) {
  const origin = new URL(operatorUrl(publicHost, port));
  return server(
    origin.protocol.slice(0, -1),
    origin.host,
    "The default host is the operator tenant's (server.public_host).",
  );
}

function server(scheme: string, host: string, defaultIs: string) {
  return {
    url: `${scheme}://{host}`,
    description: `A tenant's host, with its port if any: the tenant comes from the Host header, and an unknown host answers 404 NO_SITE. ${defaultIs}`,
    // (A variable's own description is valid OpenAPI 3.1, but swagger-parser's schema refuses it.)
    variables: { host: { default: host } },
  };
}

/**
 * The document as served on a request: its server's default host is the one the request named
 * (a tenant's host, since an unknown one answered 404 NO_SITE before), with the port it was sent
 * with; https unless the name is local, as for the exported document.
 */
export function withServerOfRequest(document: unknown, request: FastifyRequest): Record<string, unknown> {
  const header = request.headers.host ?? '';
  const name = normaliseHost(header);
  if (name === '') return document as Record<string, unknown>;
  const port = /^[^[]*:(\d+)$|^\[[^\]]*\]:(\d+)$/.exec(header.trim());
  const host = port ? `${name}:${port[1] ?? port[2]}` : name;
  return {
    ...(document as Record<string, unknown>),
    servers: [
      server(isLocalHost(name) ? 'http' : 'https', host, 'The default host is the one this document was read on.'),
    ],
  };
}

/**
 * What every operation shares, added once the routes are converted: the 431 Node's parser answers
 * to any request whose headers pass 16 KB (framework/http/problems.ts), as a problem. And on the
 * operations that take `Prefer: replica` (http/replica-choice.ts), the answer's Preference-Applied.
 */
function finishDocument(document: Record<string, unknown>): Record<string, unknown> {
  const headersTooLarge = {
    description: 'Request headers over 16 KB (HEADERS_TOO_LARGE), refused before any route runs',
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
  for (const operations of Object.values((document.paths ?? {}) as Record<string, Record<string, Operation>>)) {
    for (const operation of Object.values(operations)) {
      if (operation.responses && !operation.responses['431']) operation.responses['431'] = headersTooLarge;
      const answer = operation.responses?.['200'];
      if (answer && operation['x-exports'] !== undefined) withExports(operation, answer);
      if (answer && takesReplicaPreference(operation))
        answer.headers = { ...answer.headers, 'Preference-Applied': PREFERENCE_APPLIED_HEADER };
    }
  }
  return document;
}

type Operation = {
  'x-exports'?: string;
  parameters?: { in?: string; name?: string }[];
  responses?: Record<string, { headers?: Record<string, unknown>; [member: string]: unknown }>;
};

const takesReplicaPreference = (operation: Operation) =>
  (operation.parameters ?? []).some((p) => p.in === 'header' && p.name === PREFER_HEADER);

const PREFERENCE_APPLIED_HEADER = {
  description: `${REPLICA_PREFERENCE} when the read replica served the answer, which may then be up to database.replica_max_lag_ms behind the latest writes (eventually consistent). Absent: the primary served it.`,
  schema: { type: 'string', enum: [REPLICA_PREFERENCE] },
};

/**
 * A list that exports (RouteDefinition.exports): its answer's CSV and NDJSON beside the page's
 * JSON, the file they come in, and the 406 of an Accept that takes none of them.
 */
function withExports(operation: Operation, answer: NonNullable<Operation['responses']>[string]): void {
  const name = operation['x-exports'];
  delete operation['x-exports'];
  const content = (answer.content ?? {}) as Record<string, unknown>;
  answer.content = {
    ...content,
    'text/csv': {
      schema: {
        type: 'string',
        description: `Every matching row (?format=csv or Accept: text/csv): RFC 4180 with a header line of the field names; a text cell starting with =, +, -, @, a tab or a carriage return is prefixed with '.`,
      },
    },
    'application/x-ndjson': {
      schema: {
        type: 'string',
        description: 'Every matching row (?format=ndjson or Accept: application/x-ndjson): one JSON object a line.',
      },
    },
  };
  answer.headers = {
    ...answer.headers,
    'Content-Disposition': {
      description: `With CSV or NDJSON: attachment; filename="${name}-<date>.csv" (or .ndjson).`,
      schema: { type: 'string' },
    },
  };
  operation.responses!['406'] = {
    description: 'The Accept header takes none of application/json, text/csv, application/x-ndjson (NOT_ACCEPTABLE)',
    content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
  };
}

/** The served document (built once, then cached by @fastify/swagger). */
export function openApiDocument(app: FastifyInstance): Record<string, unknown> {
  return app.swagger() as unknown as Record<string, unknown>;
}
