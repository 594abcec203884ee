/**
 * The upstream MCP server as a child process on stdio. Each line of its stderr is a log record of the
 * logger "upstream"; its exit is reported through the channel's `closed` with the exit code or signal and
 * the last lines of its stderr (not once the channel was closed: the exit is then that close's doing).
 *
 * Outside Windows the child leads a process group (and session) of its own, and taskgate signals the whole
 * group: a wrapper (`npx`, `uvx`, `sh -c`) never leaves the real server behind, and a terminal's Ctrl-C
 * reaches taskgate alone, which then drains. The group watchdog stops the group if taskgate dies first.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Logger } from 'pino';
import { named } from '../observability/logger.js';
import { ChildStderr } from './child-stderr.js';
import { groupWatchdog } from './group-watchdog.js';
import { LineChannel } from './line-channel.js';
import type { Flow } from './valve.js';
import { groupRuns, signalGroup } from './process-group.js';

export interface UpstreamCommand {
  command: string;
  args: string[];
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
}

export interface StdioUpstream {
  channel: LineChannel;
  pid: number | undefined;
  /**
   * Ends the child and every process of its group: closes its input, then SIGTERM, then SIGKILL to the
   * group, each after a grace period (STOP_GRACE_MS). Settles once all are gone (or after the last grace);
   * safe to call again.
   */
  stop(): Promise<void>;
}

export class UpstreamStartError extends Error {
  constructor(command: string, cause: Error) {
    super(`Cannot start the upstream server "${command}": ${cause.message}`);
    this.name = 'UpstreamStartError';
  }
}

/**
 * How long the group has to end after its input was closed, after SIGTERM, and after SIGKILL: a server that
 * keeps a timer alive is stopped in half a second, and one that ignores SIGTERM in one and a half, well
 * within the 2 s a desktop client gives taskgate before its own SIGTERM.
 */
const STOP_GRACE_MS = { input: 500, SIGTERM: 1_000, SIGKILL: 1_000 } as const;
/** How often the group is looked at while it is being stopped. */
const POLL_MS = 25;

const ownGroup = process.platform !== 'win32';

export async function spawnStdioUpstream(
  upstream: UpstreamCommand,
  maxMessageBytes: number,
  logger: Logger,
  flow?: Flow,
): Promise<StdioUpstream> {
  const child = spawn(upstream.command, upstream.args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...upstream.env },
    ...(upstream.cwd === undefined ? {} : { cwd: upstream.cwd }),
    detached: ownGroup,
  });
  try {
    await once(child, 'spawn');
  } catch (error) {
    throw new UpstreamStartError(upstream.command, error as Error);
  }
  const pid = child.pid!;
  if (ownGroup) groupWatchdog?.watch(pid, logger);
  const channel = new LineChannel(
    child.stdout,
    child.stdin,
    maxMessageBytes,
    'the upstream server',
    false,
    flow,
  );
  const stderr = new ChildStderr(child.stderr, named(logger, 'upstream').child({ pid }));
  /** The signals taskgate sent its group: an exit after one of them, or with 0 once its input was closed, was asked for. */
  const sent: NodeJS.Signals[] = [];
  let reported = false;
  const exitReported = new Promise<void>((resolve) => {
    child.on('close', (code, signal) => {
      // Its stderr has closed; its last partial line is flushed just after this event.
      void stderr.ended.then(() => {
        const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
        const asked = sent.length > 0 || (code === 0 && child.stdin.writableEnded);
        const last = stderr.lastLines();
        const details = { pid, code, signal, ...(last === '' ? {} : { stderr: last }) };
        const why =
          sent.length === 0 ? 'taskgate closed its input' : `taskgate sent its process group ${sent.at(-1)}`;
        if (asked) logger.info(details, `upstream server ${how}: ${why}`);
        else logger.warn(details, `upstream server ${how}`);
        channel.markClosed(`the upstream server ${how}${last === '' ? '' : ` (stderr: ${last})`}`);
        reported = true;
        resolve();
      });
    });
  });
  // A child that dies while we write to it must not take taskgate down with EPIPE.
  child.stdin.on('error', () => undefined);

  /** Its exit reported (stdio closed, so no process holds its pipes) and no process of its group runs. */
  const ended = async (withinMs: number): Promise<boolean> => {
    const deadline = performance.now() + withinMs;
    await settledWithin(exitReported, withinMs);
    while (!reported || (ownGroup && groupRuns(pid))) {
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await pause(Math.min(POLL_MS, left));
    }
    return true;
  };
  const signal = (name: NodeJS.Signals): void => {
    sent.push(name);
    if (ownGroup) signalGroup(pid, name);
    else child.kill(name);
  };
  const stopping = async (): Promise<void> => {
    child.stdin.end();
    if (await ended(STOP_GRACE_MS.input)) return;
    for (const name of ['SIGTERM', 'SIGKILL'] as const) {
      logger.info(
        { pid, signal: name },
        `upstream server is still running: sending its process group ${name}`,
      );
      signal(name);
      if (await ended(STOP_GRACE_MS[name])) return;
    }
    logger.warn(
      { pid },
      `upstream server's process group was still there ${STOP_GRACE_MS.SIGKILL} ms after SIGKILL`,
    );
  };
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= stopping().finally(() => {
      if (ownGroup) groupWatchdog?.forget(pid);
    }));
  return { channel, pid, stop };
}

/**
 * Resolves once `promise` has, or after `ms`. The timer is not unref'd: taskgate waits for its servers
 * before it exits (the watchdog is for when it cannot).
 */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
