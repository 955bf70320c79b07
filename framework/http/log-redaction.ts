import type { FastifyRequest } from 'fastify';

// Query parameters that carry secrets: set-password tokens in mailed links, single sign-on codes
// and state, the signature of a link that opens without a session (a tenant's export). Their
// values never reach a log line or a trace.
const SECRET_PARAM = /token|code|state|secret|password|key|signature|^sig$/i;

/** The request URL as it may be logged: secret query values replaced, everything else kept. */
export function loggableUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  let redacted = false;
  for (const key of new Set(params.keys())) {
    if (SECRET_PARAM.test(key)) {
      params.set(key, 'redacted');
      redacted = true;
    }
  }
  return redacted ? `${url.slice(0, q)}?${params.toString()}` : url;
}

/** Replaces fastify's request serializer, which logs the URL verbatim. */
export const requestLogSerializers = {
  req: (req: FastifyRequest) => ({
    method: req.method,
    url: loggableUrl(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  }),
};
