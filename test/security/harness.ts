import http from 'node:http';

/** One request as the suite sends it: every header and byte under the suite's control. */
export interface Sent {
  method: string;
  host: string;
  /** Path plus query string, sent as written (duplicated parameters, traversal and all). */
  path: string;
  headers?: Record<string, string>;
  cookie?: string;
  /** A value to send as JSON (application/json), or raw bytes/text with headers of the caller's choice. */
  json?: unknown;
  body?: string | Buffer;
  /** The operation this request exercises (for the transcript and failure messages). */
  operationId?: string;
}

export interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  json: Record<string, unknown> | undefined;
}

export interface TranscriptEntry {
  sent: Sent;
  status: number;
  contentType: string;
  text: string;
}

/**
 * A plain HTTP/1.1 client against the listening service: the Host header, the Origin, the cookie
 * and the body bytes are exactly what the suite says (node:http, no browser rules). Every answer
 * is kept in the transcript so the leak scan can read all of them afterwards.
 */
export class Client {
  readonly transcript: TranscriptEntry[] = [];
  requests = 0;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  private readonly port: number;
  constructor(port: number) {
    this.port = port;
  }

  send(req: Sent): Promise<Answer> {
    this.requests++;
    const headers: Record<string, string | number> = { host: req.host, ...(req.headers ?? {}) };
    let payload: Buffer | undefined;
    if (req.json !== undefined) {
      payload = Buffer.from(typeof req.json === 'string' ? req.json : JSON.stringify(req.json));
      headers['content-type'] ??= 'application/json';
    } else if (req.body !== undefined) {
      payload = Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body);
    }
    if (payload) headers['content-length'] = payload.length;
    if (req.cookie) headers.cookie = req.cookie;
    return new Promise((resolve, reject) => {
      const request = http.request(
        { host: '127.0.0.1', port: this.port, method: req.method, path: req.path, headers, agent: this.agent },
        (res) => {
          const chunks: Buffer[] = [];
          // A stream of live changes (GET <list>/stream) does not end by itself: once its first
          // block (the retry hint, a reset) has come, the caller has been let in, and the suite
          // closes it and checks what it answered like any other answer.
          const streaming = res.statusCode === 200 && /^text\/event-stream/.test(String(res.headers['content-type']));
          res.on('data', (c: Buffer) => {
            chunks.push(c);
            if (streaming && Buffer.concat(chunks).includes('\n\n')) {
              finish();
              request.destroy();
            }
          });
          res.on('error', reject);
          res.on('end', () => finish());
          let finished = false;
          const finish = () => {
            if (finished) return;
            finished = true;
            const text = Buffer.concat(chunks).toString('utf8');
            const contentType = String(res.headers['content-type'] ?? '');
            let json: Record<string, unknown> | undefined;
            if (/json/.test(contentType) && text !== '') {
              try {
                json = JSON.parse(text) as Record<string, unknown>;
              } catch {
                json = undefined;
              }
            }
            this.transcript.push({
              sent: { ...req, body: undefined, json: undefined },
              status: res.statusCode ?? 0,
              contentType,
              text,
            });
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          };
        },
      );
      request.on('error', reject);
      if (payload) request.write(payload);
      request.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** A short description of a request and its answer for assertion messages. */
export function describeExchange(req: Sent, res: Answer): string {
  const path = req.path.length > 160 ? `${req.path.slice(0, 160)}…` : req.path;
  return `${req.operationId ?? ''} ${req.method} ${req.host}${path} → ${res.status} ${res.text.slice(0, 300)}`;
}
