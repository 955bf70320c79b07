import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import supertest from 'supertest';

/**
 * The test app's HTTP client (TestApp.http): supertest's interface, sent through fastify's
 * documented `inject()` rather than a socket. supertest binds a port, connects and closes for
 * every request; inject hands the request to the same routes, hooks and serializers in the
 * process. The wire is not what most tests test: those that test it (the front door, raw bytes,
 * connection handling, streaming) listen on a port themselves.
 *
 * A request built only from `set`, `send` (an object or a string), `query`, `type`, `accept` and
 * `expect(status)` goes through inject, and its answer reads as supertest's would: status,
 * headers, `text` for text and JSON, `body` parsed from JSON (`{}` for text and HEAD), a Buffer for
 * binary types. Any other call (`attach`, `buffer`, `parse`, `timeout`, `redirects`, `end`,
 * `pipe`, …) turns the request into a real supertest one, with the calls so far replayed on it,
 * so every supertest feature still works. test/framework/inject-agent.test.ts sends a recorded set
 * of requests both ways and finds the same answers.
 */
export type HttpRequest = supertest.Test;

export interface HostAgent {
  get(url: string): HttpRequest;
  post(url: string): HttpRequest;
  put(url: string): HttpRequest;
  patch(url: string): HttpRequest;
  delete(url: string): HttpRequest;
  head(url: string): HttpRequest;
  options(url: string): HttpRequest;
}

export function hostAgent(web: FastifyInstance, host: string): HostAgent {
  const request = (method: Method) => (url: string) => pendingRequest(web, host, method, url);
  return {
    get: request('GET'),
    post: request('POST'),
    put: request('PUT'),
    patch: request('PATCH'),
    delete: request('DELETE'),
    head: request('HEAD'),
    options: request('OPTIONS'),
  };
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS';
interface Call {
  name: string;
  args: unknown[];
}

/** What supertest exposes of an answer, as the tests read it. */
export interface AgentResponse {
  status: number;
  statusCode: number;
  ok: boolean;
  redirect: boolean;
  headers: Record<string, string | string[] | undefined>;
  header: Record<string, string | string[] | undefined>;
  type: string;
  charset: string | undefined;
  text: string | undefined;
  body: unknown;
  get(field: string): string | string[] | undefined;
  /** What was asked (supertest's `res.request`). */
  request: { method: string; url: string };
}

function pendingRequest(web: FastifyInstance, host: string, method: Method, url: string): HttpRequest {
  const calls: Call[] = [{ name: 'set', args: ['Host', host] }];
  let real: supertest.Test | undefined;
  let sent: Promise<AgentResponse> | undefined;
  // The real supertest request, with every call so far made on it.
  const materialise = (): supertest.Test => {
    if (!real) {
      const agent = supertest(web.server) as unknown as Record<string, (url: string) => supertest.Test>;
      let test = agent[method.toLowerCase()]!(url);
      for (const { name, args } of calls) test = callOn(test, name, args) as supertest.Test;
      real = test;
    }
    return real;
  };
  const send = (): Promise<AgentResponse> => (sent ??= viaInject(web, method, url, calls));
  const proxy: HttpRequest = new Proxy({} as HttpRequest, {
    get(_target, property) {
      if (real) {
        const value = Reflect.get(real, property, real) as unknown;
        return typeof value === 'function' ? (...args: unknown[]) => unwrap(value.apply(real, args)) : value;
      }
      if (property === 'then')
        return (ok?: (r: AgentResponse) => unknown, fail?: (e: unknown) => unknown) => send().then(ok, fail);
      if (property === 'catch') return (fail: (e: unknown) => unknown) => send().catch(fail);
      if (property === 'finally') return (done: () => void) => send().finally(done);
      if (typeof property === 'symbol') return undefined;
      return (...args: unknown[]) => {
        if (sent) throw new Error(`${property}() after the request was sent`);
        const call = { name: property, args };
        if (!injectable(call)) return unwrap(callOn(materialise(), property, args));
        calls.push(call);
        return proxy;
      };
    },
  });
  // A supertest method that returns the request itself returns this proxy, so the chain goes on here.
  const unwrap = (value: unknown) => (value === real ? proxy : value);
  return proxy;
}

const callOn = (test: supertest.Test, name: string, args: unknown[]): unknown =>
  (test as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!(...args);

const isPlain = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
const isScalar = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);
const isFlat = (v: unknown) =>
  isPlain(v) &&
  Object.values(v).every((x) => x === undefined || isScalar(x) || (Array.isArray(x) && x.every(isScalar)));

/** A call inject can carry exactly as supertest would send it. */
function injectable({ name, args }: Call): boolean {
  switch (name) {
    case 'set':
      return (
        (args.length === 2 && typeof args[0] === 'string' && typeof args[1] === 'string') ||
        (args.length === 1 && isPlain(args[0]) && Object.values(args[0]).every((v) => typeof v === 'string'))
      );
    case 'send':
      return args.length === 1 && (typeof args[0] === 'string' || isPlain(args[0]) || Array.isArray(args[0]));
    case 'query':
      return args.length === 1 && (typeof args[0] === 'string' || isFlat(args[0]));
    case 'type':
    case 'accept':
      return args.length === 1 && typeof args[0] === 'string' && (args[0].includes('/') || args[0] in SHORT_TYPES);
    case 'expect':
      return args.length === 1 && typeof args[0] === 'number';
    default:
      return false;
  }
}

// The shorthands supertest's type() and accept() resolve (superagent defines form as urlencoded).
const SHORT_TYPES: Record<string, string> = {
  json: 'application/json',
  form: 'application/x-www-form-urlencoded',
  urlencoded: 'application/x-www-form-urlencoded',
  'form-data': 'application/x-www-form-urlencoded',
  html: 'text/html',
  text: 'text/plain',
  xml: 'application/xml',
};

// superagent's rule: /json or +json, not /json-seq.
const isJson = (mime: string) => /[/+]json($|[^-\w])/i.test(mime);

/** As qs.stringify(value, { indices: false, strictNullHandling: true }) writes a flat object. */
function queryString(value: Record<string, unknown>): string {
  const encode = (s: string) =>
    encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const pairs: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    for (const item of Array.isArray(v) ? v : [v]) {
      if (item === undefined) continue;
      pairs.push(item === null ? encode(key) : `${encode(key)}=${encode(String(item))}`);
    }
  }
  return pairs.join('&');
}

async function viaInject(web: FastifyInstance, method: Method, url: string, calls: Call[]): Promise<AgentResponse> {
  const headers: Record<string, string> = {};
  const setHeader = (name: string, value: string) => {
    headers[name.toLowerCase()] = value;
  };
  const queries: string[] = [];
  const queryObject: Record<string, unknown> = {};
  let data: unknown;
  const expected: number[] = [];
  for (const { name, args } of calls) {
    const [first, second] = args;
    if (name === 'set') {
      if (typeof first === 'string') setHeader(first, second as string);
      else for (const [k, v] of Object.entries(first as Record<string, string>)) setHeader(k, v);
    } else if (name === 'type') setHeader('Content-Type', SHORT_TYPES[first as string] ?? (first as string));
    else if (name === 'accept') setHeader('Accept', SHORT_TYPES[first as string] ?? (first as string));
    else if (name === 'query') {
      if (typeof first === 'string') queries.push(first);
      else Object.assign(queryObject, first);
    } else if (name === 'expect') expected.push(first as number);
    else if (name === 'send') {
      // superagent's send: objects merge, strings append (form-encoded unless a type is set), and an
      // object without a type is JSON.
      if (typeof first === 'string') {
        if (!headers['content-type']) setHeader('Content-Type', SHORT_TYPES.form!);
        const form = headers['content-type'] === SHORT_TYPES.form;
        data = typeof data === 'string' && data !== '' ? (form ? `${data}&${first}` : data + first) : first;
      } else {
        data = isPlain(data) && isPlain(first) ? { ...data, ...first } : first;
        if (!headers['content-type']) setHeader('Content-Type', 'application/json');
      }
    }
  }
  const fromObject = queryString(queryObject);
  if (fromObject) queries.push(fromObject);
  const path = queries.length ? `${url}${url.includes('?') ? '&' : '?'}${queries.join('&')}` : url;
  if (method !== 'HEAD') headers['accept-encoding'] ??= 'gzip, deflate';
  let payload: string | undefined;
  if (data !== undefined && method !== 'HEAD') {
    if (typeof data === 'string') payload = data;
    else {
      const mime = (headers['content-type'] ?? '').split(';')[0]!.trim();
      if (mime === SHORT_TYPES.form) payload = queryString(data as Record<string, unknown>);
      else if (isJson(mime)) payload = JSON.stringify(data);
      else throw new Error(`inject-agent: an object body needs a JSON or form type, not ${mime}`);
    }
  }
  // supertest sends no User-Agent; inject would add its own unless told not to.
  const options: InjectOptions = {
    method,
    url: path,
    headers: { 'user-agent': undefined, ...headers },
    ...(payload === undefined ? {} : { payload }),
  };
  const answer = toResponse(method, path, await web.inject(options));
  for (const status of expected) {
    if (answer.status !== status)
      throw new Error(
        `expected ${status} "${STATUS_CODES[status]}", got ${answer.status} "${STATUS_CODES[answer.status]}"`,
      );
  }
  return answer;
}

/** The answer as supertest presents it (superagent's buffering and parsing rules). */
function toResponse(method: Method, url: string, res: LightMyRequestResponse): AgentResponse {
  // As Node's HTTP client hands headers over: Set-Cookie always a list, any other repeated one joined.
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(res.headers)) {
    if (value === undefined) continue;
    const values = (Array.isArray(value) ? value : [value]).map(String);
    headers[name] = name === 'set-cookie' ? values : values.join(', ');
  }
  const contentType = String(headers['content-type'] ?? '');
  const [mime = '', ...params] = contentType.split(/ *; */);
  const charset = params.map((p) => /^charset=(.*)$/i.exec(p)?.[1]).find((c) => c !== undefined);
  const [kind, subtype = ''] = mime.toLowerCase().split('/');
  let text: string | undefined;
  let body: unknown = {};
  if (method !== 'HEAD') {
    const binary =
      ['audio', 'font', 'image', 'video'].includes(kind ?? '') ||
      ['gz', 'gzip'].includes(subtype) ||
      ['application/octet-stream', 'application/pdf'].includes(mime.toLowerCase());
    if (binary) body = res.rawPayload;
    else if (isJson(mime)) {
      text = res.payload;
      const trimmed = text.replace(/^\uFEFF/, '');
      body = trimmed ? JSON.parse(trimmed) : trimmed;
    } else if (mime.toLowerCase() === SHORT_TYPES.form) {
      text = res.payload;
      body = Object.fromEntries(new URLSearchParams(text));
    } else text = res.payload;
  }
  const status = res.statusCode;
  return {
    status,
    statusCode: status,
    ok: status >= 200 && status < 300,
    redirect: [301, 302, 303, 305, 307, 308].includes(status),
    headers,
    header: headers,
    type: mime,
    charset,
    text,
    body,
    get: (field: string) => headers[field.toLowerCase()],
    request: { method, url },
  };
}
