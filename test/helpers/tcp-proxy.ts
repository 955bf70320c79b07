import { createServer, Socket, type Server } from 'node:net';

/**
 * A TCP relay on 127.0.0.1 in front of a loopback port, which a test can freeze: while frozen it
 * passes no byte either way and holds what arrives (the connections stay open), as a server that
 * has stopped answering or a network path that drops packets looks to a client. Thawed, it passes
 * what it held, in order, and relays again.
 */
export interface TcpProxy {
  port: number;
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  let frozen = false;
  const held: [Socket, Buffer][] = [];
  const sockets = new Set<Socket>();
  const relay = (from: Socket, to: Socket) =>
    from.on('data', (chunk: Buffer) => {
      if (frozen) held.push([to, chunk]);
      else to.write(chunk);
    });
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    const end = () => {
      sockets.delete(client);
      sockets.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', end).on('close', end);
    }
    relay(client, upstream);
    relay(upstream, client);
    upstream.connect(targetPort, '127.0.0.1');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  return {
    port: address.port,
    freeze: () => {
      frozen = true;
    },
    thaw: () => {
      frozen = false;
      for (const [to, chunk] of held.splice(0)) if (!to.destroyed) to.write(chunk);
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
