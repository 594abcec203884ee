// @ts-check
/**
 * Processes the bench starts: spawn with a bounded wait for readiness, a free loopback port, the CPU
 * time a process has used (from /proc), and a stop that waits for the exit.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { sleep } from './stats.js';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on Linux, whatever the kernel's HZ). */
const USER_HZ = 100;

/**
 * User + system CPU seconds that process `pid` has used so far (its own threads, not its children).
 * Resolution 10 ms: callers measure over enough calls for that to be small.
 * @param {number} pid
 */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime is field 14, stime field 15.
  return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
}

/** Resident set size of `pid` in bytes (VmRSS). @param {number} pid */
export function rssBytes(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return match ? Number(match[1]) * 1024 : NaN;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Resolves once something accepts TCP connections on 127.0.0.1:port, polling for at most `timeoutMs`.
 * @param {number} port @param {number} timeoutMs @param {() => string | undefined} failed a reason to stop early
 */
export async function waitForPort(port, timeoutMs, failed) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reason = failed();
    if (reason !== undefined) throw new Error(reason);
    const open = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await sleep(50);
  }
}

/**
 * Keeps the last 8 KiB of a child's stderr in `owner.stderr` (for error messages), and hands each line to
 * `onLine` as it comes.
 * @param {{ stderr: string }} owner
 * @param {import('node:stream').Readable | null} stderr
 * @param {((line: string) => void) | undefined} onLine
 */
export function keepStderr(owner, stderr, onLine) {
  let partial = '';
  stderr?.setEncoding('utf8').on('data', (/** @type {string} */ chunk) => {
    owner.stderr = (owner.stderr + chunk).slice(-8192);
    partial += chunk;
    const lines = partial.split('\n');
    partial = /** @type {string} */ (lines.pop());
    for (const line of lines) onLine?.(line);
  });
}

/**
 * A server process the bench started and will stop: its stderr is kept (the last 8 KiB) for error
 * messages, and `lines` sees each stderr line as it comes.
 */
export class Proc {
  /**
   * @param {string} label
   * @param {string[]} argv
   * @param {{ env?: NodeJS.ProcessEnv, cwd?: string, onLine?: (line: string) => void }} [options]
   */
  constructor(label, argv, options = {}) {
    const [command, ...args] = argv;
    this.label = label;
    this.stderr = '';
    /** @type {string | undefined} */
    this.exited = undefined;
    this.child = spawn(/** @type {string} */ (command), args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: options.env ?? process.env,
      cwd: options.cwd,
    });
    keepStderr(this, this.child.stderr, options.onLine);
    this.child.once('exit', (code, signal) => {
      this.exited = `${label} exited (${signal ?? code}): ${this.stderr.slice(-2000)}`;
    });
    this.child.once('error', (error) => {
      this.exited = `${label} could not start: ${error.message}`;
    });
  }

  get pid() {
    return /** @type {number} */ (this.child.pid);
  }

  /** Stops the process (SIGTERM, then SIGKILL after 3 s) and waits for it to exit. */
  async stop() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exit = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 3000);
    await exit;
    clearTimeout(timer);
  }
}

/**
 * Starts a process that prints `marker<url>` on a stderr line once it listens, and resolves with the URL.
 * @param {string} label @param {string[]} argv @param {RegExp} pattern its first group is the URL
 * @param {number} [timeoutMs]
 * @returns {Promise<{ proc: Proc, url: string }>}
 */
export function startWithUrl(label, argv, pattern, timeoutMs = 20_000) {
  return new Promise((resolve, reject) => {
    /** @type {Proc} */
    let proc;
    const timer = setTimeout(
      () => reject(new Error(`${label}: no URL after ${timeoutMs} ms: ${proc.stderr}`)),
      timeoutMs,
    );
    proc = new Proc(label, argv, {
      onLine: (line) => {
        const match = pattern.exec(line);
        if (match) {
          clearTimeout(timer);
          resolve({ proc, url: /** @type {string} */ (match[1]) });
        }
      },
    });
    proc.child.once('exit', () => {
      clearTimeout(timer);
      reject(new Error(proc.exited));
    });
  });
}
