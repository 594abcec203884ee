/**
 * Starts a fixture server in Streamable HTTP mode (`--http PORT`) as a real process, and waits, with a
 * bound, for the one line it prints once listening.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { FIXTURES, type FixtureName } from './taskgate.js';

export interface HttpFixture {
  /** The MCP endpoint, e.g. http://127.0.0.1:40123/mcp */
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything it wrote to stderr so far. */
  stderr: () => string;
  /** Resolves once it has written `text` to stderr; fails after `withinMs`. */
  logged(text: string, withinMs?: number): Promise<void>;
  /** Makes it end every session at once, as a server that forgets them (POST /end-sessions). */
  endSessions(): Promise<void>;
  /** Ends it (SIGKILL by default: a crash) and waits until it is gone. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export async function startHttpFixture(
  name: FixtureName,
  options: { port?: number; env?: Record<string, string> } = {},
): Promise<HttpFixture> {
  const child = spawn(process.execPath, [FIXTURES[name], '--http', String(options.port ?? 0)], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...options.env },
  });
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`fixture ${name} did not listen within 10 s:\n${stderr}`)),
      10_000,
    );
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      const match = /^listening (\S+)$/m.exec(stderr);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`fixture ${name} exited with code ${code} before listening:\n${stderr}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    child,
    stderr: () => stderr,
    logged: (text, withinMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (stderr.includes(text)) return resolve();
        const onData = (): void => {
          if (!stderr.includes(text)) return;
          clearTimeout(timer);
          child.stderr!.off('data', onData);
          resolve();
        };
        const timer = setTimeout(() => {
          child.stderr!.off('data', onData);
          reject(new Error(`fixture ${name} did not log "${text}" within ${withinMs} ms:\n${stderr}`));
        }, withinMs);
        child.stderr!.on('data', onData);
      }),
    async endSessions() {
      const reply = await fetch(new URL('/end-sessions', url), { method: 'POST' });
      if (!reply.ok) throw new Error(`POST /end-sessions was answered ${reply.status}`);
    },
    async stop(signal = 'SIGKILL') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.kill(signal);
      await exited;
    },
  };
}
