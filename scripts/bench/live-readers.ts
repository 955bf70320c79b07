import { request } from 'node:http';
import { connect } from 'node:net';

/**
 * The live scenario's stream clients (scripts/bench/live.ts), in a process of their own so that
 * reading thousands of streams does not share the run's event loop (its creates and list
 * requests). Every stream is read to the end of what arrives (a stream that is not read is rightly
 * dropped as slow), but only the sampled ones are parsed and timed; the others count their bytes
 * and nothing else, so the readers cost the machine as little as a client that reads can: they
 * stand for clients on other machines, whose CPU is no part of what the streams cost the service.
 * So an unsampled stream is a bare TCP connection that sends its request and then reads into one
 * buffer shared by all of them (net's `onread`), with no HTTP parsing past the status line and no
 * Buffer made per read: the bytes arrive and leave the kernel's buffer as promptly as through
 * node:http, at a fraction of the CPU.
 */

export interface ReaderStream {
  host: string;
  cookie: string;
  sampled: boolean;
}

export type ReaderRequest =
  | { type: 'open'; port: number; path: string; streams: ReaderStream[] }
  /** The sampled streams' deliveries of the widgets named, created on their hosts, once each has them all or timeoutMs passed. */
  | { type: 'collect'; created: { host: string; names: string[] }[]; timeoutMs: number }
  | { type: 'close' };

export type ReaderAnswer =
  | { type: 'opened'; open: number }
  | {
      type: 'collected';
      /** Arrival of each sampled stream's created event minus its row's createdAt, ms. */
      latencies: number[];
      missing: number;
      sampled: number;
      /** Bytes every stream has read since the last collect, and streams the service ended or dropped. */
      bytes: number;
      ended: number;
      /** CPU time of this process since the last collect, ms (user + system). */
      cpuMs: number;
    }
  | { type: 'closed' }
  | { type: 'failed'; error: string };

interface Open {
  /** Closes the connection; destroyed: it is closed, by either side. */
  destroy: () => void;
  destroyed: () => boolean;
  host: string;
  /** Sampled streams: latency of each created widget's event, by name. */
  latencies: Map<string, number> | undefined;
}

const streams: Open[] = [];
let bytes = 0;
let ended = 0;
let cpu = process.cpuUsage();
const send = (answer: ReaderAnswer) => process.send?.(answer);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where every unsampled stream reads into: its bytes are counted, never looked at past the status line. */
const shared = Buffer.alloc(64 * 1024);
const OK = Buffer.from('HTTP/1.1 200 ');

/** An unsampled stream: a bare connection that counts what arrives. */
function openCounted(port: number, path: string, stream: ReaderStream): Promise<Open> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const socket = connect({
      host: '127.0.0.1',
      port,
      onread: {
        buffer: shared,
        callback: (size) => {
          bytes += size;
          if (answered) return true;
          answered = true;
          // The status line arrives first, whole (the answer's head is written in one piece).
          if (size >= OK.length && shared.subarray(0, OK.length).equals(OK)) {
            resolve(open);
            return true;
          }
          reject(new Error(`a stream answered ${shared.toString('latin1', 0, Math.min(size, 40))}`));
          socket.destroy();
          return false;
        },
      },
    });
    const open: Open = {
      destroy: () => socket.destroy(),
      destroyed: () => socket.destroyed,
      host: stream.host,
      latencies: undefined,
    };
    socket.once('end', () => {
      ended++;
      socket.end();
    });
    socket.on('error', (err) => {
      if (!answered) reject(err);
    });
    socket.write(
      `GET ${path} HTTP/1.1\r\nhost: ${stream.host}\r\ncookie: ${stream.cookie}\r\naccept: text/event-stream\r\n\r\n`,
    );
  });
}

function openOne(port: number, path: string, stream: ReaderStream): Promise<Open> {
  if (!stream.sampled) return openCounted(port, path, stream);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        headers: { host: stream.host, cookie: stream.cookie, accept: 'text/event-stream' },
      },
      (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`a stream answered ${res.statusCode}`));
          res.resume();
          return;
        }
        const latencies = new Map<string, number>();
        const open: Open = {
          destroy: () => req.destroy(),
          destroyed: () => req.destroyed,
          host: stream.host,
          latencies,
        };
        res.once('end', () => ended++);
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          const now = Date.now();
          bytes += chunk.length;
          buffer += chunk;
          let cut: number;
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            if (!block.includes('event: created')) continue;
            const data = block.split('\n').find((line) => line.startsWith('data: '));
            if (!data) continue;
            const { row } = JSON.parse(data.slice(6)) as { row: { name: string; createdAt: string } };
            latencies.set(row.name, now - Date.parse(row.createdAt));
          }
        });
        resolve(open);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function collect(created: { host: string; names: string[] }[], timeoutMs: number): Promise<ReaderAnswer> {
  const byHost = new Map(created.map(({ host, names }) => [host, names]));
  const sampled = streams.filter((s) => s.latencies && byHost.has(s.host));
  const lacking = () =>
    sampled.some((s) => byHost.get(s.host)!.some((name) => !s.latencies!.has(name)) && !s.destroyed());
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && lacking()) await sleep(50);
  const latencies: number[] = [];
  let missing = 0;
  for (const stream of sampled) {
    for (const name of byHost.get(stream.host)!) {
      const latency = stream.latencies!.get(name);
      if (latency === undefined) missing++;
      else latencies.push(latency);
    }
    stream.latencies!.clear();
  }
  const used = process.cpuUsage(cpu);
  cpu = process.cpuUsage();
  const answer: ReaderAnswer = {
    type: 'collected',
    latencies,
    missing,
    sampled: sampled.length,
    bytes,
    ended,
    cpuMs: (used.user + used.system) / 1000,
  };
  bytes = 0;
  return answer;
}

process.on('message', (message: ReaderRequest) => {
  const failed = (err: Error) => send({ type: 'failed', error: err.stack ?? err.message });
  if (message.type === 'open') {
    void (async () => {
      // A few at a time: the service opens each in a transaction of its own.
      const batch = 20;
      for (let i = 0; i < message.streams.length; i += batch)
        streams.push(
          ...(await Promise.all(
            message.streams.slice(i, i + batch).map((s) => openOne(message.port, message.path, s)),
          )),
        );
      send({ type: 'opened', open: streams.length });
    })().catch(failed);
  } else if (message.type === 'collect') {
    collect(message.created, message.timeoutMs).then(send, failed);
  } else if (message.type === 'close') {
    for (const stream of streams) stream.destroy();
    streams.length = 0;
    send({ type: 'closed' });
  }
});
process.on('disconnect', () => process.exit(0));
