import pg from 'pg';

type Handler = (payload: string) => void;

/** The first retry of a lost LISTEN connection; the delay doubles up to RECONNECT_MAX_MS while PostgreSQL is away. */
const RECONNECT_FIRST_MS = 250;
const RECONNECT_MAX_MS = 2000;

/**
 * One LISTEN connection per process for every in-process cache that PostgreSQL evicts with
 * NOTIFY (tenant hosts, public read validators). A lost connection (an error, or the server
 * closing it: a restart, pg_terminate_backend) means notifications could have been missed: every
 * `onLost` callback runs (each cache drops what it holds) and the listener reconnects, retrying
 * until PostgreSQL answers again. Once it listens again the callbacks run once more: what a cache
 * filled while nothing listened may have missed its eviction too.
 */
export class ChangeListener {
  private readonly handlers = new Map<string, Handler[]>();
  private readonly lost: (() => void)[] = [];
  private client: pg.Client | undefined;
  private closed = false;
  private reconnecting: NodeJS.Timeout | undefined;
  private readonly url: string;

  constructor(url: string) {
    this.url = url;
  }

  /** Subscribes before `start`; channel names are SQL identifiers chosen by the framework. */
  on(channel: string, handler: Handler): void {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a channel name: ${channel}`);
    this.handlers.set(channel, [...(this.handlers.get(channel) ?? []), handler]);
  }

  onLost(callback: () => void): void {
    this.lost.push(callback);
  }

  /** Connects and listens; a failure here is the caller's (the service does not start without it). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    // While connecting, a failure is connect()'s rejection; the client's events are not yet ours to act on.
    client.on('error', () => {});
    try {
      await client.connect();
      client.on('notification', (msg) => {
        if (msg.payload === undefined) return;
        for (const handler of this.handlers.get(msg.channel) ?? []) handler(msg.payload);
      });
      for (const channel of this.handlers.keys()) await client.query(`listen ${channel}`);
    } catch (err) {
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    let gone = false;
    const onGone = () => {
      if (gone || this.closed) return;
      gone = true;
      if (this.client === client) this.client = undefined;
      this.dropCaches();
      void client.end().catch(() => {});
      this.reconnect(RECONNECT_FIRST_MS);
    };
    client.on('error', onGone);
    client.on('end', onGone);
    this.client = client;
  }

  private reconnect(delayMs: number): void {
    if (this.closed || this.reconnecting) return;
    this.reconnecting = setTimeout(() => {
      this.reconnecting = undefined;
      if (this.closed) return;
      this.connect().then(
        () => this.dropCaches(),
        () => this.reconnect(Math.min(delayMs * 2, RECONNECT_MAX_MS)),
      );
    }, delayMs);
    this.reconnecting.unref();
  }

  private dropCaches(): void {
    for (const callback of this.lost) callback();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnecting);
    this.reconnecting = undefined;
    const client = this.client;
    this.client = undefined;
    if (client) await client.end().catch(() => {});
  }
}
