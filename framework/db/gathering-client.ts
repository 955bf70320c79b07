import { Socket } from 'node:net';
import pg from 'pg';

/**
 * A pg client on a socket the framework made and handed to it (pg's `stream` option), so that
 * statements issued together can be gathered into one write by corking that socket: in pipeline
 * mode pg writes each query as it is issued, one write per query otherwise. Nothing of pg's own
 * internals is reached.
 */
export class GatheringClient extends pg.Client {
  readonly socket: Socket;
  constructor(config: pg.ClientConfig = {}) {
    const socket = new Socket();
    super({ ...config, stream: () => socket });
    this.socket = socket;
  }
}

/** Issues fn's queries on the client as one write: the socket is corked while they are issued. */
export function gathered<T>(client: pg.ClientBase, fn: () => T): T {
  const socket = client instanceof GatheringClient ? client.socket : undefined;
  socket?.cork();
  try {
    return fn();
  } finally {
    socket?.uncork();
  }
}
