// @ts-check
/**
 * A bare JSON-lines MCP client on a child's stdin/stdout, for the task workloads that measure taskgate
 * itself: it parses each answer once and validates nothing, so that the load generator (the SDK Client
 * zod-checks every message) is not what limits tasks/get per second or the creation of 10 000 tasks.
 */
import { spawn } from 'node:child_process';
import { keepStderr } from './procs.js';

export class RawStdioClient {
  /**
   * @param {string[]} argv
   * @param {{ onStderrLine?: (line: string) => void, onNotification?: (message: any) => void }} [options]
   */
  constructor(argv, options = {}) {
    const [command, ...args] = argv;
    this.child = spawn(/** @type {string} */ (command), args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.nextId = 1;
    /** @type {Map<number, { resolve: (result: any) => void, reject: (error: Error) => void }>} */
    this.pending = new Map();
    this.stderr = '';
    this.onNotification = options.onNotification;
    /** @type {string | undefined} */
    this.exited = undefined;
    let buffered = '';
    this.child.stdout.setEncoding('utf8').on('data', (/** @type {string} */ chunk) => {
      buffered += chunk;
      let newline;
      while ((newline = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        if (line.trim() !== '') this.receive(JSON.parse(line));
      }
    });
    keepStderr(this, this.child.stderr, options.onStderrLine);
    this.child.once('exit', (code, signal) => {
      this.exited = `exited (${signal ?? code}): ${this.stderr.slice(-2000)}`;
      for (const { reject } of this.pending.values()) reject(new Error(this.exited));
      this.pending.clear();
    });
  }

  get pid() {
    return /** @type {number} */ (this.child.pid);
  }

  /** @param {any} message */
  receive(message) {
    if (message.id !== undefined && message.method === undefined) {
      const waiter = this.pending.get(message.id);
      if (!waiter) return;
      this.pending.delete(message.id);
      if (message.error) waiter.reject(Object.assign(new Error(message.error.message), message.error));
      else waiter.resolve(message.result);
    } else if (message.id !== undefined) {
      // A request from the server (ping, roots/list): answer so that nothing waits on the bench.
      const answer =
        message.method === 'ping'
          ? { jsonrpc: '2.0', id: message.id, result: {} }
          : { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'not in the bench' } };
      this.child.stdin.write(JSON.stringify(answer) + '\n');
    } else {
      this.onNotification?.(message);
    }
  }

  /** @param {string} method @param {unknown} [params] @returns {Promise<any>} */
  request(method, params) {
    if (this.exited) return Promise.reject(new Error(this.exited));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }

  /** @param {string} method @param {unknown} [params] */
  notify(method, params) {
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n');
  }

  /** initialize + initialized, declaring client-side tasks support as a task-aware client does. */
  async initialize() {
    const result = await this.request('initialize', {
      protocolVersion: '2025-11-25',
      capabilities: { tasks: { requests: {} } },
      clientInfo: { name: 'taskgate-bench-raw', version: '1' },
    });
    this.notify('notifications/initialized');
    return result;
  }

  /** Closes stdin (taskgate then stops its upstream and exits) and waits; SIGTERM after 3 s, SIGKILL after 6 s. */
  async close() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exit = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin.end();
    const term = setTimeout(() => this.child.kill('SIGTERM'), 3000);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 6000);
    await exit;
    clearTimeout(term);
    clearTimeout(timer);
  }
}
