import pg from 'pg';

type Handler = (payload: string) => void;

/**
 * One LISTEN connection per process for every in-process cache that PostgreSQL evicts with
 * NOTIFY (tenant hosts, public read validators). A lost connection means notifications could
 * have been missed: every `onLost` callback runs (each cache drops what it holds) and the
 * listener reconnects.
 */
export class ChangeListener {
  private readonly handlers = new Map<string, Handler[]>();
  private readonly lost: (() => void)[] = [];
  private client: pg.Client | undefined;
  private closed = false;
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

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('error', () => {
      for (const callback of this.lost) callback();
      this.client = undefined;
      if (!this.closed) setTimeout(() => void this.start().catch(() => {}), 1000).unref();
    });
    await client.connect();
    client.on('notification', (msg) => {
      if (msg.payload === undefined) return;
      for (const handler of this.handlers.get(msg.channel) ?? []) handler(msg.payload);
    });
    for (const channel of this.handlers.keys()) await client.query(`listen ${channel}`);
    this.client = client;
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('error');
      client.on('error', () => {});
      await client.end().catch(() => {});
    }
  }
}
