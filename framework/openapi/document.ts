import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Services } from '../services.ts';
import { ProblemSchema } from './problem-schema.ts';
import { sessionCookie } from '../access/session-cookie.ts';
import { API_PREFIX } from '../entity/names.ts';

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
          'Lists take `limit` (1-100, default 20), `offset` (0-10000, default 0), `sort` (a field, "-" prefix for descending; ties break on id) and `after` (the previous page\'s `next`, for keyset paging at any depth), all optional, and answer `{ items, total, totalExact, limit, offset, next }`: `total` is counted up to 10000 (`totalExact` false past that), `next` is null on the last page.',
          'Not signed in: 401 AUTH_REQUIRED. Signed in without the permission: 403 AUTH_FORBIDDEN.',
        ].join('\n\n'),
      },
      components: {
        securitySchemes: {
          cookieAuth: {
            type: 'apiKey',
            in: 'cookie',
            name: sessionCookie(services.config).name,
            description: 'The session cookie set by login. Non-browser clients send the Set-Cookie value back as a Cookie header.',
          },
        },
      },
    },
    refResolver: {
      buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`),
    },
  });
  await app.register(swaggerUi, { routePrefix: DOCS_PATH });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}
