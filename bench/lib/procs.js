// @ts-check
/**
 * Processes the bench starts: spawn with a bounded wait for readiness, a free loopback port, the CPU
 * time a process has used (from /proc), and a stop that waits for the exit.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
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

/**
 * CPU seconds of the children this process has reaped so far (cutime + cstime of /proc/self/stat): a
 * child's whole CPU once it has exited and been waited for, which cpuSeconds can no longer read.
 */
export function reapedChildrenCpuSeconds() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // cutime is field 16, cstime field 17.
  return (Number(fields[13]) + Number(fields[14])) / USER_HZ;
}

/**
 * The whole machine's CPU seconds so far, from /proc/stat's `cpu` line (all cores): `busy` (user, nice,
 * system, irq, softirq) and `steal` (time the hypervisor gave the machine's CPUs to others).
 */
export function machineCpuSeconds() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return {
    busy: (Number(user) + Number(nice) + Number(system) + Number(irq) + Number(softirq)) / USER_HZ,
    steal: Number(steal) / USER_HZ,
  };
}

/** Resident set size of `pid` in bytes (VmRSS). @param {number} pid */
export function rssBytes(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return match ? Number(match[1]) * 1024 : NaN;
}

/** Resident set size of `pid` in bytes from /proc/<pid>/statm (cheaper than status), or 0 if it is gone. @param {number} pid */
export function rssOf(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_BYTES;
  } catch {
    return 0;
  }
}
const PAGE_BYTES = 4096;

/**
 * Every descendant of `pid` (children, theirs, …), from /proc/<pid>/task/<tid>/children of every thread
 * (libuv spawns from the main thread, but a child may have been forked by another). Bounded in depth.
 * @param {number} pid
 */
export function descendants(pid) {
  /** @type {number[]} */
  const found = [];
  let level = [pid];
  for (let depth = 0; depth < 8 && level.length > 0; depth++) {
    /** @type {number[]} */
    const next = [];
    for (const parent of level) {
      /** @type {string[]} */
      let threads;
      try {
        threads = readdirSync(`/proc/${parent}/task`);
      } catch {
        continue;
      }
      for (const tid of threads) {
        try {
          const text = readFileSync(`/proc/${parent}/task/${tid}/children`, 'utf8').trim();
          if (text !== '') next.push(...text.split(' ').map(Number));
        } catch {
          // the thread or the process ended meanwhile
        }
      }
    }
    found.push(...next);
    level = next;
  }
  return found;
}

/**
 * Samples the RSS of a process and of all its descendants every `everyMs` until stop(): the peaks of the
 * root alone, of the descendants together, and of the sum (at the same sample), and the most descendants.
 * Each sample is a few /proc reads per process (descendants of node servers: ~7 threads each).
 */
export class TreeSampler {
  /** @param {number} pid @param {number} [everyMs] */
  constructor(pid, everyMs = 100) {
    this.pid = pid;
    this.peak = { root: 0, children: 0, sum: 0, processes: 0, samples: 0 };
    this.timer = setInterval(() => this.sample(), everyMs);
    this.sample();
  }

  sample() {
    const root = rssOf(this.pid);
    const kids = descendants(this.pid);
    let children = 0;
    for (const kid of kids) children += rssOf(kid);
    const p = this.peak;
    p.samples++;
    p.root = Math.max(p.root, root);
    p.children = Math.max(p.children, children);
    p.sum = Math.max(p.sum, root + children);
    p.processes = Math.max(p.processes, kids.length);
  }

  /** Stops sampling (after one last sample) and returns the peaks. */
  stop() {
    clearInterval(this.timer);
    this.sample();
    return { ...this.peak };
  }
}

/**
 * The kernel's counters of connections dropped because a listen queue was full (TcpExt ListenOverflows,
 * ListenDrops in /proc/net/netstat): for this network namespace, so other work on the machine counts too.
 */
export function listenCounters() {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
    const header = lines.find((line) => line.startsWith('TcpExt:'))?.split(' ') ?? [];
    const values = lines.filter((line) => line.startsWith('TcpExt:'))[1]?.split(' ') ?? [];
    const get = (/** @type {string} */ name) => Number(values[header.indexOf(name)] ?? NaN);
    return { listenOverflows: get('ListenOverflows'), listenDrops: get('ListenDrops') };
  } catch {
    return { listenOverflows: NaN, listenDrops: NaN };
  }
}

/**
 * Samples the accept queue of the socket listening on 127.0.0.1:port every `everyMs` (`ss -ltnH`: Recv-Q is
 * the connections the kernel has completed and the process not yet accepted, Send-Q the backlog it
 * allows): the deepest it got. Without `ss`, `peak` stays NaN.
 */
export class AcceptQueueSampler {
  /** @param {number} port @param {number} [everyMs] */
  constructor(port, everyMs = 100) {
    this.port = port;
    this.peak = NaN;
    this.backlog = NaN;
    this.busy = false;
    this.timer = setInterval(() => this.sample(), everyMs);
  }

  sample() {
    if (this.busy) return;
    this.busy = true;
    execFile('ss', ['-ltnH', `sport = :${this.port}`], { timeout: 2000 }, (error, stdout) => {
      this.busy = false;
      const fields = error ? [] : stdout.trim().split(/\s+/);
      if (fields[0] !== 'LISTEN') return;
      this.peak = Math.max(Number.isNaN(this.peak) ? 0 : this.peak, Number(fields[1]));
      this.backlog = Number(fields[2]);
    });
  }

  stop() {
    clearInterval(this.timer);
    return { peak: this.peak, backlog: this.backlog };
  }
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
