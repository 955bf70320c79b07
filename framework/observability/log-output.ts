import pino from 'pino';
import pinoPretty from 'pino-pretty';
import type { FastifyBaseLogger } from 'fastify';

export type LogFormat = '' | 'json' | 'pretty';

/** The format in force: the configured one, or, left empty, pretty on a terminal and JSON otherwise. */
export function effectiveLogFormat(configured: LogFormat, stdoutIsTerminal: boolean): 'json' | 'pretty' {
  if (configured !== '') return configured;
  return stdoutIsTerminal ? 'pretty' : 'json';
}

/**
 * The process's logger on stdout, with synchronous writes: a line is out before the next step,
 * and a reader that went away silences the log instead of hanging the exit-time flush. JSON is
 * pino's own line format; pretty is pino-pretty's, in the process (no worker thread): the time of
 * day, no pid or host name, and each line's extra members on that one line.
 */
export function processLogger(level: string, format: 'json' | 'pretty'): FastifyBaseLogger {
  if (format === 'pretty') {
    const stream = pinoPretty({
      colorize: process.stdout.isTTY === true,
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
      singleLine: true,
    });
    return pino({ level }, stream) as FastifyBaseLogger;
  }
  return pino({ level }, pino.destination({ dest: 1, sync: true })) as FastifyBaseLogger;
}
