/**
 * The upstream MCP server as a child process on stdio. Each line of its stderr is a log record of the
 * logger "upstream"; its exit is reported through the channel's `closed` with the exit code or signal and
 * the last lines of its stderr (not once the channel was closed: the exit is then that close's doing).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Logger } from 'pino';
import { named } from '../observability/logger.js';
import { ChildStderr } from './child-stderr.js';
import { LineChannel } from './line-channel.js';

export interface UpstreamCommand {
  command: string;
  args: string[];
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
}

export interface StdioUpstream {
  channel: LineChannel;
  pid: number | undefined;
  /** Ends the child: closes its stdin, then SIGTERM, then SIGKILL, each after a grace period. */
  stop(graceMs?: number): Promise<void>;
}

export class UpstreamStartError extends Error {
  constructor(command: string, cause: Error) {
    super(`Cannot start the upstream server "${command}": ${cause.message}`);
    this.name = 'UpstreamStartError';
  }
}

export async function spawnStdioUpstream(
  upstream: UpstreamCommand,
  maxMessageBytes: number,
  logger: Logger,
): Promise<StdioUpstream> {
  const child = spawn(upstream.command, upstream.args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...upstream.env },
    ...(upstream.cwd === undefined ? {} : { cwd: upstream.cwd }),
  });
  try {
    await once(child, 'spawn');
  } catch (error) {
    throw new UpstreamStartError(upstream.command, error as Error);
  }
  const channel = new LineChannel(child.stdout, child.stdin, maxMessageBytes, 'the upstream server', false);
  const stderr = new ChildStderr(child.stderr, named(logger, 'upstream').child({ pid: child.pid }));
  let exited = false;
  /** The signals taskgate sent it: an exit by one of them, or with 0 once its input was closed, was asked for. */
  const sent = new Set<NodeJS.Signals>();
  child.on('close', (code, signal) => {
    exited = true;
    // Its stderr has closed; its last partial line is flushed just after this event.
    void stderr.ended.then(() => {
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      const asked = signal ? sent.has(signal) : code === 0 && child.stdin.writableEnded;
      const last = stderr.lastLines();
      const details = { pid: child.pid, code, signal, ...(last === '' ? {} : { stderr: last }) };
      const why = signal ? `taskgate sent it ${signal}` : 'taskgate closed its input';
      if (asked) logger.info(details, `upstream server ${how}: ${why}`);
      else logger.warn(details, `upstream server ${how}`);
      channel.markClosed(`the upstream server ${how}${last === '' ? '' : ` (stderr: ${last})`}`);
    });
  });
  // A child that dies while we write to it must not take taskgate down with EPIPE.
  child.stdin.on('error', () => undefined);

  const stop = async (graceMs = 2_000): Promise<void> => {
    if (exited) return;
    const closed = once(child, 'close');
    child.stdin.end();
    for (const signal of [undefined, 'SIGTERM', 'SIGKILL'] as const) {
      if (signal) {
        sent.add(signal);
        child.kill(signal);
      }
      const timer = new Promise((resolve) => setTimeout(resolve, graceMs).unref());
      if ((await Promise.race([closed.then(() => 'closed'), timer])) === 'closed') return;
    }
  };
  return { channel, pid: child.pid, stop };
}
