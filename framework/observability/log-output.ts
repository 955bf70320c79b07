import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';

export type LogFormat = '' | 'json' | 'pretty';

/** The format in force: the configured one, or, left empty, pretty on a terminal and JSON otherwise. */
export function effectiveLogFormat(configured: LogFormat, stdoutIsTerminal: boolean): 'json' | 'pretty' {
  if (configured !== '') return configured;
  return stdoutIsTerminal ? 'pretty' : 'json';
}

// pino-pretty's options for a person reading a terminal: the time of day, no pid or host name,
// each line's extra members on one line.
const PRETTY = { colorize: true, sync: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', singleLine: true } as const;

/**
 * The process's logger on stdout (synchronous writes: a line is out before the next step, and a
 * reader that went away silences the log instead of hanging the exit-time flush). JSON is pino's
 * own line format; pretty is pino-pretty's, loaded only when asked for. Without pino-pretty
 * installed, pretty falls back to JSON and says so in the first line.
 */
export async function processLogger(level: string, format: 'json' | 'pretty'): Promise<FastifyBaseLogger> {
  if (format === 'pretty') {
    const pretty = await loadPinoPretty();
    if (pretty) return pino({ level }, pretty(PRETTY)) as FastifyBaseLogger;
    const log = pino({ level }, pino.destination({ dest: 1, sync: true })) as FastifyBaseLogger;
    log.warn('server.log_format is pretty but pino-pretty is not installed: logging JSON');
    return log;
  }
  return pino({ level }, pino.destination({ dest: 1, sync: true })) as FastifyBaseLogger;
}

type PinoPretty = (options: typeof PRETTY) => NodeJS.WritableStream;

async function loadPinoPretty(): Promise<PinoPretty | undefined> {
  // By a name held in a variable: the package is optional, and its absence is not a type error.
  const name = 'pino-pretty';
  try {
    const loaded = (await import(name)) as { default?: PinoPretty };
    return loaded.default;
  } catch {
    return undefined;
  }
}
