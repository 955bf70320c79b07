import Type from 'typebox';
import { defineRoute } from '../../framework/entity/define.ts';
import { problem } from '../../framework/errors.ts';
import { CORS_ORIGINS_MAX, normaliseOrigin } from '../../framework/http/origins.ts';
import { ownCorsOrigins, setOwnCorsOrigins } from '../../framework/tenancy/control-plane.ts';
import { CORS_ALLOWED_HEADERS } from '../../framework/http/cors.ts';

/**
 * The web origins whose pages may call this tenant's API with a personal access token (CORS):
 * the tenant's administrator lists them; the framework answers those pages (framework/http/cors.ts)
 * beside the installation's own (server.cors_origins). Stored as a setting of the tenant, through
 * the framework's control plane, which writes the transaction's own tenant only.
 */
export const CORS_MANAGE = 'cors:manage';

const CorsOriginsSchema = Type.Object(
  {
    origins: Type.Array(Type.String(), {
      description: 'Origins, scheme://host[:port] as a browser sends them (lower-case, no default port), sorted',
    }),
  },
  { additionalProperties: false, title: 'CorsOrigins' },
);

const NOT_AN_ORIGIN = 'is not an origin: scheme://host[:port], http or https, with no path, and never *';

const ABOUT = [
  "A page served from a listed origin may call this tenant's API with a personal access token (Authorization: Bearer): the API answers its preflights (OPTIONS) and its requests with Access-Control-Allow-Origin naming that origin, and never with Access-Control-Allow-Credentials, so no cookie is ever used across origins.",
  `A preflight may ask for the headers ${CORS_ALLOWED_HEADERS}. The installation's own origins (server.cors_origins) are listed for every tenant besides these.`,
].join(' ');

export const listCorsOriginsRoute = defineRoute({
  method: 'GET',
  url: '/api/v1/auth/cors-origins',
  operationId: 'auth-cors-origins-read',
  summary: 'The origins whose pages may call the API with a token',
  description: ABOUT,
  tags: ['auth'],
  access: { permission: CORS_MANAGE },
  schema: { response: { 200: { ...CorsOriginsSchema, description: "The tenant's origins" } } },
  handler: async ({ tx }) => ({ origins: await ownCorsOrigins(tx) }),
});

export const putCorsOriginsRoute = defineRoute({
  method: 'PUT',
  url: '/api/v1/auth/cors-origins',
  operationId: 'auth-cors-origins-put',
  summary: 'Set the origins whose pages may call the API with a token',
  description: [
    ABOUT,
    `Sends the complete list (at most ${CORS_ORIGINS_MAX}; empty: none). Each is stored as a browser sends it: lower-case, without the scheme's default port, deduplicated and sorted. An entry that is no origin (a path, a query, credentials, another scheme, *) is 422 VALIDATION_FAILED pointing at it. Takes effect at the next request, in every process.`,
  ].join('\n\n'),
  tags: ['auth'],
  access: { permission: CORS_MANAGE },
  schema: {
    body: Type.Object(
      {
        origins: Type.Array(Type.String({ minLength: 1, maxLength: 300 }), {
          maxItems: CORS_ORIGINS_MAX,
          description: 'The complete list, e.g. ["https://app.example.com", "http://localhost:5173"]',
        }),
      },
      { additionalProperties: false },
    ),
    response: { 200: { ...CorsOriginsSchema, description: "The tenant's origins, as stored" } },
  },
  async handler({ tx, body, services }) {
    const errors = body.origins.flatMap((entry, i) =>
      normaliseOrigin(entry) === undefined
        ? [{ pointer: `/body/origins/${i}`, message: `${entry} ${NOT_AN_ORIGIN}` }]
        : [],
    );
    if (errors.length > 0) throw problem('VALIDATION_FAILED', `origins: ${errors[0]!.message}`, { errors });
    const origins = [...new Set(body.origins.map((entry) => normaliseOrigin(entry)!))].sort();
    await setOwnCorsOrigins(tx, services.hosts, origins);
    return { origins };
  },
});
