import { pino, type Logger } from 'pino';

/** Logs go to stderr, always: in stdio mode stdout carries the protocol. */
export function createLogger(level: string): Logger {
  return pino({ level, base: { name: 'taskgate' } }, pino.destination({ dest: 2, sync: true }));
}
