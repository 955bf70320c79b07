import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SETTINGS_ENV, type ChildMessage, type ChildRequest } from './protocol.ts';

export interface ServerProcess {
  readonly name: string;
  readonly port: number;
  readonly ready: Extract<ChildMessage, { type: 'ready' }>;
  readonly pid: number;
  /** Sends a request and waits for the next message of the given type. */
  ask<T extends ChildMessage['type']>(
    request: ChildRequest,
    answer: T,
    timeoutMs: number,
  ): Promise<Extract<ChildMessage, { type: T }>>;
  stop(): Promise<void>;
}

/**
 * Starts one of the bench's server processes (service.ts, baseline.ts) with its settings in the
 * environment (and `env` over the run's own) and waits for it to report the port it listens on.
 * Servers run in their own processes so the load generator does not share their event loop.
 */
export async function startServer(
  name: string,
  script: string,
  settings: object,
  execArgv: string[] = [],
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const child = fork(fileURLToPath(new URL(script, import.meta.url)), [], {
    env: { ...process.env, ...env, [SETTINGS_ENV]: JSON.stringify(settings) },
    execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = await nextMessage(child, name, 'ready', 180_000);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    port: ready.port,
    ready,
    pid: child.pid!,
    ask: (request, answer, timeoutMs) => {
      const reply = nextMessage(child, name, answer, timeoutMs);
      child.send(request);
      return reply;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      child.send({ type: 'stop' } satisfies ChildRequest);
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function nextMessage<T extends ChildMessage['type']>(
  child: ChildProcess,
  name: string,
  type: T,
  timeoutMs: number,
): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message: ChildMessage) => {
      if (message.type === 'failed') {
        done();
        reject(new Error(`${name} failed: ${message.error}`));
      } else if (message.type === type) {
        done();
        resolve(message as Extract<ChildMessage, { type: T }>);
      }
    };
    const onExit = (code: number | null) => {
      done();
      reject(new Error(`${name} exited (code ${code}) before answering ${type}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${name} did not answer ${type} within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}
