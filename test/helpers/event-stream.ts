import { request, type IncomingMessage, type ClientRequest } from 'node:http';

/** One server-sent event as a client receives it. */
export interface ReceivedEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * A client of a `text/event-stream` answer over real HTTP (127.0.0.1 only), reading events as they
 * come: `next` waits for the following one. A refused open keeps its status and problem document.
 */
export class StreamClient {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  /** The answer's body when it was not a stream (a problem document). */
  readonly problem: Record<string, unknown> | undefined;
  /** The `retry:` hint and the comment lines (heartbeats) seen so far. */
  retry: number | undefined;
  comments = 0;
  /** The last `id:` seen, with an event or alone: what a reconnect sends as Last-Event-ID. */
  lastEventId: string | undefined;
  private readonly events: ReceivedEvent[] = [];
  private readonly waiting: (() => void)[] = [];
  private ended = false;
  private buffer = '';
  private readonly req: ClientRequest;
  readonly response: IncomingMessage;

  private constructor(req: ClientRequest, res: IncomingMessage, problem?: Record<string, unknown>) {
    this.req = req;
    this.response = res;
    this.status = res.statusCode ?? 0;
    this.headers = res.headers;
    this.problem = problem;
    if (problem) return;
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => this.parse(chunk));
    const finish = () => {
      this.ended = true;
      this.wake();
    };
    res.on('end', finish);
    res.on('close', finish);
    res.on('error', finish);
  }

  /** Opens `path` on the server at `base` (http://127.0.0.1:<port>) with these headers (Host among them). */
  static open(base: string, path: string, headers: Record<string, string>): Promise<StreamClient> {
    const { hostname, port } = new URL(base);
    return new Promise((resolve, reject) => {
      const req = request(
        { hostname, port, path, method: 'GET', agent: false, headers: { accept: 'text/event-stream', ...headers } },
        (res) => {
          if (res.statusCode !== 200) {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              text += c;
            });
            res.on('end', () => resolve(new StreamClient(req, res, text ? JSON.parse(text) : {})));
            return;
          }
          resolve(new StreamClient(req, res));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** The next event, waiting up to `timeoutMs`; undefined when the stream ended or nothing came in time. */
  async next(timeoutMs = 5000): Promise<ReceivedEvent | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.events.length === 0 && !this.ended) {
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.events.shift();
  }

  /** The next `count` events; fails the test when fewer come in time. */
  async take(count: number, timeoutMs = 5000): Promise<ReceivedEvent[]> {
    const out: ReceivedEvent[] = [];
    for (let i = 0; i < count; i++) {
      const event = await this.next(timeoutMs);
      if (!event) throw new Error(`expected ${count} events, got ${out.length}: ${JSON.stringify(out)}`);
      out.push(event);
    }
    return out;
  }

  /** Whether the server ended the answer. */
  get isEnded(): boolean {
    return this.ended;
  }

  /** Waits until the server ends the answer (true) or the time passes (false). */
  async waitEnd(timeoutMs = 5000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.ended;
  }

  close(): void {
    this.req.destroy();
  }

  private parse(chunk: string): void {
    this.buffer += chunk;
    let cut: number;
    while ((cut = this.buffer.indexOf('\n\n')) >= 0) {
      const block = this.buffer.slice(0, cut);
      this.buffer = this.buffer.slice(cut + 2);
      let id: string | undefined;
      let event = 'message';
      const data: string[] = [];
      let fields = 0;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) {
          this.comments++;
          continue;
        }
        const colon = line.indexOf(':');
        const name = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (name === 'retry') {
          this.retry = Number(value);
          continue;
        }
        fields++;
        if (name === 'id') id = value;
        else if (name === 'event') event = value;
        else if (name === 'data') data.push(value);
      }
      if (id !== undefined) this.lastEventId = id;
      // A block without data is no event (as EventSource reads it): an `id:` alone moves the position.
      if (fields > 0 && (data.length > 0 || id === undefined)) this.events.push({ id, event, data: data.join('\n') });
    }
    this.wake();
  }

  private wake(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}
