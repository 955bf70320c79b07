import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { problem, type ProblemError } from '../errors.ts';

/**
 * Which methods each path answers, collected from fastify's onRoute hook as the routes are
 * declared, so a request the router does not route can be told apart: an unknown path (404
 * ROUTE_NOT_FOUND) or a known path asked with a method it does not declare (405
 * METHOD_NOT_ALLOWED with Allow, RFC 9110 15.5.6 and 10.2.1).
 *
 * A route's URL is matched the way the router matches it: static segments as written, a parameter
 * (`:id`, with or without a regular expression) as one non-empty segment, a wildcard (`*`) as the
 * rest; a trailing slash is ignored (the app's `ignoreTrailingSlash`).
 */
export class MethodTable {
  private readonly routes: { url: string; pattern: RegExp; methods: Set<string> }[] = [];

  add(methods: string | readonly string[], url: string): void {
    let entry = this.routes.find((r) => r.url === url);
    if (!entry) {
      entry = { url, pattern: urlPattern(url), methods: new Set() };
      this.routes.push(entry);
    }
    for (const method of typeof methods === 'string' ? [methods] : methods) {
      entry.methods.add(method.toUpperCase());
      // fastify answers HEAD wherever GET is declared (exposeHeadRoutes).
      if (method.toUpperCase() === 'GET') entry.methods.add('HEAD');
    }
  }

  /** The methods declared for a request path (no query string), in a stable order; none for an unknown path. */
  allowed(path: string): string[] {
    const candidates = [trimSlash(path)];
    try {
      const decoded = trimSlash(decodeURI(path));
      if (decoded !== candidates[0]) candidates.push(decoded);
    } catch {
      // Not valid percent-encoding: the raw path is all there is.
    }
    const found = new Set<string>();
    for (const route of this.routes) {
      if (candidates.some((c) => route.pattern.test(c))) for (const method of route.methods) found.add(method);
    }
    return [...found].sort(byUsualOrder);
  }
}

const USUAL_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const byUsualOrder = (a: string, b: string): number => {
  const [i, j] = [USUAL_ORDER.indexOf(a), USUAL_ORDER.indexOf(b)];
  if (i !== -1 || j !== -1) return (i === -1 ? USUAL_ORDER.length : i) - (j === -1 ? USUAL_ORDER.length : j);
  return a < b ? -1 : a > b ? 1 : 0;
};

const trimSlash = (path: string): string => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A fastify route URL as a regular expression over request paths. */
function urlPattern(url: string): RegExp {
  let source = '';
  let i = 0;
  const path = trimSlash(url);
  while (i < path.length) {
    const c = path[i]!;
    if (c === '*') {
      source += '.*';
      i += 1;
    } else if (c === ':' && path[i + 1] !== ':') {
      // A parameter: its name, then an optional (regexp); it spans one segment.
      i += 1;
      while (i < path.length && /[A-Za-z0-9_]/.test(path[i]!)) i += 1;
      if (path[i] === '(') {
        let depth = 0;
        for (; i < path.length; i++) {
          if (path[i] === '\\') i += 1;
          else if (path[i] === '(') depth += 1;
          else if (path[i] === ')' && --depth === 0) break;
        }
        i += 1;
      }
      source += '[^/]+';
    } else if (c === ':') {
      // "::" is a literal colon.
      source += ':';
      i += 2;
    } else {
      source += escapeRegExp(c);
      i += 1;
    }
  }
  return new RegExp(`^${source || '/'}$`);
}

/** One table per HTTP server: every encapsulated fastify context shares its node server. */
const tables = new WeakMap<Server, MethodTable>();

/**
 * Collects the routes of this app (and of every plugin registered after this call) into the
 * server's method table. Call before any route is declared.
 */
export function collectMethods(app: FastifyInstance): MethodTable {
  const table = new MethodTable();
  tables.set(app.server, table);
  app.addHook('onRoute', (route: RouteOptions) => table.add(route.method, route.url));
  return table;
}

/** The methods the request's path declares (none for an unknown path), in a stable order. */
export function declaredMethods(request: FastifyRequest): string[] {
  return tables.get(request.server.server)?.allowed(request.url.split('?', 1)[0]!) ?? [];
}

/**
 * For a request no route took: 405 METHOD_NOT_ALLOWED naming the methods its path declares (and
 * setting Allow through `setAllow`), or undefined when the path itself is unknown.
 */
export function methodRefusal(request: FastifyRequest, setAllow: (value: string) => void): ProblemError | undefined {
  const path = request.url.split('?', 1)[0]!;
  const allowed = declaredMethods(request);
  // A declared method the router still did not route (a parameter it refused) stays a 404.
  if (allowed.length === 0 || allowed.includes(request.method)) return undefined;
  setAllow(allowed.join(', '));
  return problem('METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}; it allows ${allowed.join(', ')}`);
}

/**
 * CONNECT never reaches fastify: Node hands it to the server's 'connect' event with the bare
 * socket, and closes the socket when nobody listens. This service tunnels nothing, so every
 * CONNECT is answered 405 METHOD_NOT_ALLOWED as a problem document, with the Allow of its target
 * when that is a known path (empty otherwise: no method tunnels there), and the connection closed.
 */
export function answerConnect(server: Server, headers: Readonly<Record<string, string>>): void {
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    socket.on('error', () => {});
    const target = req.url ?? '';
    const allowed = target.startsWith('/') ? (tables.get(server)?.allowed(target.split('?', 1)[0]!) ?? []) : [];
    const refused = problem(
      'METHOD_NOT_ALLOWED',
      'CONNECT is not allowed: this service is not a proxy and tunnels nothing',
    );
    writeProblem(socket, refused, { ...headers, allow: allowed.join(', ') });
  });
}

/** Writes a problem as a whole HTTP/1.1 answer straight to a socket, and closes the connection. */
export function writeProblem(socket: Duplex, refused: ProblemError, headers: Readonly<Record<string, string>>): void {
  const body = JSON.stringify(refused.toDocument());
  const all: Record<string, string> = {
    'content-type': 'application/problem+json',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
    connection: 'close',
  };
  const head = Object.entries(all)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // Once the answer is flushed the connection goes, whatever the client still sends.
  socket.end(`HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status]}\r\n${head}\r\n${body}`, () =>
    socket.destroy(),
  );
}
