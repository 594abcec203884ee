import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { prettyFactory } from 'pino-pretty';

export interface LoggerOptions {
  /** Human-readable lines instead of JSON; by default when stderr is a terminal and pino-pretty is installed. */
  pretty?: boolean;
}

/** Logs go to stderr, always: in stdio mode stdout carries the protocol. */
export function createLogger(level: string, options: LoggerOptions = {}): Logger {
  const pretty = (options.pretty ?? process.stderr.isTTY === true) ? prettyStderr() : undefined;
  return pino({ level, base: { name: 'taskgate' } }, pretty ?? pino.destination({ dest: 2, sync: true }));
}

/**
 * A child logger under another name, with the parent's other bindings (a session id). pino's child() would
 * add a second "name" key after the parent's, and setBindings() appends too: the child's bindings are
 * written anew (pino.symbols is pino's interface for this).
 */
export function named(logger: Logger, name: string): Logger {
  const { name: _parent, ...others } = logger.bindings();
  const child = logger.child({});
  (child as unknown as Record<symbol, string>)[pino.symbols.chindingsSym] = '';
  child.setBindings({ name, ...others });
  return child;
}

/**
 * Pretty lines on stderr, written synchronously like the JSON ones (nothing is lost at exit). pino-pretty is
 * a development dependency: where it is not installed (a production install), logs stay JSON.
 */
function prettyStderr(): DestinationStream | undefined {
  let factory: typeof prettyFactory;
  try {
    factory = (createRequire(import.meta.url)('pino-pretty') as { prettyFactory: typeof prettyFactory })
      .prettyFactory;
  } catch {
    return undefined;
  }
  const format = factory({
    colorize: process.env.NO_COLOR === undefined,
    translateTime: 'SYS:HH:MM:ss.l',
  });
  return { write: (line: string) => void process.stderr.write(format(line)) };
}
