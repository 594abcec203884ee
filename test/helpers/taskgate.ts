/**
 * Starts real processes for integration tests: an SDK Client → built taskgate (dist/cli.js) over stdio →
 * a fixture server, or the client straight to the fixture for comparison.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { CheckedTransport } from './checked-transport.js';
import { httpTransport } from './http-client.js';
import { Inbox } from './inbox.js';

const root = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));

export const TASKGATE = root('dist/cli.js');
export const FIXTURES = {
  legacy: root('test/fixtures/legacy-server.js'),
  native: root('test/fixtures/native-server.js'),
  example: root('examples/legacy-server.js'),
  plainAnswer: root('test/fixtures/plain-answer-server.js'),
  modern: root('test/fixtures/modern-server.js'),
  v2Tasks: root('test/fixtures/v2-task-server.js'),
  conformance: root('test/fixtures/conformance-server.js'),
  conformanceModern: root('test/fixtures/conformance-modern-server.js'),
  conformanceTasks: root('test/fixtures/conformance-tasks-tools.js'),
  dualEra: root('test/fixtures/dual-era-server.js'),
  conformanceEverything: root('test/fixtures/conformance-everything.js'),
  polling: root('test/fixtures/polling-server.js'),
  eraChoosing: root('test/fixtures/era-choosing-server.js'),
  conformanceV2Tasks: root('test/fixtures/conformance-v2-tasks.js'),
} as const;
export type FixtureName = keyof typeof FIXTURES;

export const TASK_AWARE: ClientCapabilities = {
  tasks: { list: {}, cancel: {}, requests: {} },
  elicitation: { form: {} },
  sampling: {},
  roots: {},
};

/** A task-aware client's initialize request, id "init", as raw clients send it. */
export const INITIALIZE = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: TASK_AWARE,
    clientInfo: { name: 'raw', version: '1' },
  },
} as const;

export interface Connection {
  client: Client;
  transport: CheckedTransport;
  /** What taskgate (and the server behind it) wrote to stderr. */
  stderr: () => string;
  pid: number | null;
  close(): Promise<void>;
}

/** taskgate as an HTTP gateway in its own process, listening on a free loopback port. */
export class Gateway {
  stderr = '';
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;

  private constructor(
    readonly child: ChildProcessWithoutNullStreams,
    readonly url: URL,
  ) {
    this.exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  }

  static async start(
    upstream: string[],
    flags: string[] = [],
    env: Record<string, string> = {},
  ): Promise<Gateway> {
    const child = spawn(
      process.execPath,
      [TASKGATE, '--listen', '127.0.0.1:0', ...flags, ...(upstream.length > 0 ? ['--', ...upstream] : [])],
      { stdio: 'pipe', env: { ...process.env, ...env } },
    );
    let stderr = '';
    const url = await new Promise<URL>((resolve, reject) => {
      // One that never says where it listens is stopped here: no test holds it to stop it later.
      const timer = setTimeout(() => {
        child.kill('SIGTERM');
        reject(new Error(`taskgate did not start listening: ${stderr}`));
      }, 15_000);
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const found = /"url":"([^"]+)"/.exec(stderr);
        if (found) {
          clearTimeout(timer);
          resolve(new URL(found[1]!));
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`taskgate exited with ${code}: ${stderr}`));
      });
    });
    const gateway = new Gateway(child, url);
    gateway.stderr = stderr;
    child.stderr.on('data', (chunk: Buffer) => (gateway.stderr += chunk.toString()));
    return gateway;
  }

  /** Resolves once taskgate has written `text` to its log `times` times; fails after `withinMs`. */
  logged(text: string, withinMs?: number, times?: number): Promise<void> {
    return logged(this, text, withinMs, times);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

export interface ConnectOptions {
  /** Flags for taskgate; ignored with `direct`. */
  flags?: string[];
  /** Connect the client straight to the server, without taskgate (the baseline to compare with). */
  direct?: boolean;
  capabilities?: ClientCapabilities;
  env?: Record<string, string>;
  /** The upstream command, when it is not a fixture. */
  upstream?: string[];
  /** How the client reaches taskgate: it spawns it on stdio (default), or over Streamable HTTP. */
  front?: 'stdio' | 'http';
}

export async function connect(server: FixtureName, options: ConnectOptions = {}): Promise<Connection> {
  const upstream = options.upstream ?? [process.execPath, FIXTURES[server]];
  if (options.front === 'http' && !options.direct) return connectOverHttp(upstream, options);
  const [command, ...args] = options.direct
    ? upstream
    : [
        process.execPath,
        TASKGATE,
        ...(options.flags ?? []),
        ...(upstream.length > 0 ? ['--', ...upstream] : []),
      ];
  const inner = new StdioClientTransport({
    command: command!,
    args,
    stderr: 'pipe',
    env: { ...(process.env as Record<string, string>), ...options.env },
  });
  let stderr = '';
  inner.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const transport = new CheckedTransport(inner);
  const client = new Client(
    { name: 'taskgate-test', version: '1.0.0' },
    { capabilities: options.capabilities ?? TASK_AWARE },
  );
  await client.connect(transport);
  return {
    client,
    transport,
    stderr: () => stderr,
    pid: inner.pid,
    close: () => client.close(),
  };
}

async function connectOverHttp(upstream: string[], options: ConnectOptions): Promise<Connection> {
  const gateway = await Gateway.start(upstream, options.flags ?? [], options.env ?? {});
  const transport = new CheckedTransport(httpTransport(gateway.url));
  const client = new Client(
    { name: 'taskgate-test', version: '1.0.0' },
    { capabilities: options.capabilities ?? TASK_AWARE },
  );
  try {
    await client.connect(transport);
  } catch (error) {
    await gateway.stop();
    throw error;
  }
  return {
    client,
    transport,
    stderr: () => gateway.stderr,
    pid: gateway.child.pid ?? null,
    close: async () => {
      await client.close();
      await gateway.stop();
    },
  };
}

/**
 * Resolves once a taskgate process has written `text` to its log (stderr) `times` times; fails after
 * `withinMs`.
 */
async function logged(
  taskgate: { child: ChildProcessWithoutNullStreams; stderr: string },
  text: string,
  withinMs = 10_000,
  times = 1,
): Promise<void> {
  const signal = AbortSignal.timeout(withinMs);
  try {
    while (taskgate.stderr.split(text).length <= times) await once(taskgate.child.stderr, 'data', { signal });
  } catch {
    throw new Error(
      `taskgate did not log "${text}" ${times} times within ${withinMs} ms:\n${taskgate.stderr}`,
    );
  }
}

/** The pids in the "upstream server started/restarted" lines of a taskgate log, oldest first. */
const upstreamPids = (stderr: string): number[] =>
  [...stderr.matchAll(/"pid":(\d+),"command"/g)].map((m) => Number(m[1]));

/** The pid in the most recent "upstream server started/restarted" line of a taskgate log. */
export function latestUpstreamPid(stderr: string): number {
  const pid = upstreamPids(stderr).at(-1);
  if (pid === undefined) throw new Error(`no upstream pid in the log:\n${stderr}`);
  return pid;
}

/**
 * taskgate on raw pipes, as a client that writes its own lines (what an SDK client would never send: bad
 * JSON, bad envelopes, huge lines) and keeps every line taskgate writes.
 */
export class RawPeer {
  readonly messages = new Inbox<Record<string, unknown>>();
  /** Lines on taskgate's stdout that are not JSON-RPC messages (there should be none). */
  readonly badStdout: string[] = [];
  readonly exited: Promise<[number | null, NodeJS.Signals | null]>;
  private buffered = '';
  private refusing = false;
  stderr = '';

  private constructor(readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      this.buffered += chunk;
      let newline;
      while ((newline = this.buffered.indexOf('\n')) !== -1) {
        const line = this.buffered.slice(0, newline);
        this.buffered = this.buffered.slice(newline + 1);
        this.take(line);
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    child.stdin.on('error', () => undefined);
    this.exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  }

  /** `detached`: taskgate leads a process group of its own, as a shell's foreground job does. */
  static start(
    args: string[],
    env: Record<string, string> = {},
    options: { detached?: boolean } = {},
  ): RawPeer {
    return new RawPeer(
      spawn(process.execPath, [TASKGATE, ...args], {
        stdio: 'pipe',
        env: { ...process.env, ...env },
        detached: options.detached === true,
      }),
    );
  }

  /** Starts taskgate in front of a fixture and completes the initialize handshake. */
  static async initialized(
    server: FixtureName = 'legacy',
    flags: string[] = [],
    env: Record<string, string> = {},
  ): Promise<RawPeer> {
    const peer = RawPeer.start([...flags, '--', process.execPath, FIXTURES[server]], env);
    try {
      await peer.initialize();
    } catch (error) {
      // No test holds a peer that never got initialized: stopped here, and its log kept in the failure.
      const exit = peer.alive
        ? 'still running'
        : `exited with ${peer.child.exitCode ?? peer.child.signalCode}`;
      peer.child.kill('SIGTERM');
      throw new Error(`${(error as Error).message}; taskgate ${exit}, its log:\n${peer.stderr}`, {
        cause: error,
      });
    }
    return peer;
  }

  /** The initialize handshake, as a task-aware client; fails unless initialize succeeds. */
  async initialize(): Promise<void> {
    this.send(INITIALIZE);
    // The handshake waits for the era probe (3 s at most) and a fixture's start, slow on a loaded machine.
    const answer = await this.response('init', 20_000);
    if (!('result' in answer)) throw new Error(`initialize failed: ${JSON.stringify(answer)}`);
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** From now on, answers every request taskgate makes with an error, so that nothing waits on this client. */
  refuseRequests(): void {
    this.refusing = true;
  }

  send(message: unknown): void {
    this.write(typeof message === 'string' ? message : JSON.stringify(message));
  }

  write(line: string): void {
    this.child.stdin.write(line + '\n');
  }

  response(id: string | number | null, timeoutMs?: number): Promise<Record<string, unknown>> {
    return this.messages.waitFor(
      (message) => message.id === id && ('result' in message || 'error' in message),
      `the response to ${JSON.stringify(id)}`,
      timeoutMs,
    );
  }

  /** Resolves once taskgate has written `text` to its log `times` times; fails after `withinMs`. */
  logged(text: string, withinMs?: number, times?: number): Promise<void> {
    return logged(this, text, withinMs, times);
  }

  /** The admin listener's address (taskgate started with --admin-listen), from its log line. */
  async adminUrl(): Promise<URL> {
    await this.logged('admin listener');
    return new URL(/"url":"([^"]+)","msg":"admin listener/.exec(this.stderr)![1]!);
  }

  async stop(): Promise<void> {
    this.child.stdin.end();
    if (this.alive) await this.exited;
  }

  /**
   * Ends taskgate at once, as a crash would, and every upstream server its log says it started: one that
   * ignores the end of its input (silent-server.js) would otherwise outlive it. Needs a log level of info.
   */
  async kill(): Promise<void> {
    for (const pid of upstreamPids(this.stderr)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (this.alive) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  private take(line: string): void {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      message = undefined;
    }
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      this.badStdout.push(line.slice(0, 500));
      return;
    }
    const m = message as Record<string, unknown>;
    if (m.jsonrpc !== '2.0') this.badStdout.push(line.slice(0, 500));
    if (this.refusing && typeof m.method === 'string' && 'id' in m) {
      this.send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'refused by the test client' } });
    }
    this.messages.push(m);
  }
}
