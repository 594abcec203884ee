/**
 * What a first real user hits on the HTTP front (issue 14): sessions of clients that left, addresses that
 * cannot be listened on, and readiness with an upstream that cannot start.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type Server } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { httpTransport } from '../helpers/http-client.js';
import { freePort } from '../helpers/ports.js';
import { sample } from '../helpers/prometheus.js';
import { FIXTURES, Gateway, TASK_AWARE, TASKGATE } from '../helpers/taskgate.js';

const root = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const NODE_22 = root('test/inspector/node_modules/node/bin/node');
const INSPECTOR = root(
  'test/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
);

const gateways: Gateway[] = [];

afterEach(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.stop()));
});

async function start(upstream: string[], flags: string[] = []): Promise<Gateway> {
  const gateway = await Gateway.start(upstream, flags);
  gateways.push(gateway);
  return gateway;
}

/**
 * The upstream servers taskgate runs, by pid (Linux): its children but the watchdog (one /bin/sh -c,
 * src/transport/group-watchdog.ts).
 */
function children(pid: number): number[] {
  const all = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
    .split(' ')
    .filter(Boolean)
    .map(Number);
  return all.filter((child) => {
    try {
      return !readFileSync(`/proc/${child}/cmdline`, 'latin1').startsWith('/bin/sh\0-c\0');
    } catch {
      return false; // it has exited meanwhile
    }
  });
}

async function metrics(gateway: Gateway): Promise<string> {
  return (await fetch(new URL('/metrics', gateway.url))).text();
}

describe('issue 14.3: sessions of clients that left', () => {
  const LEGACY = [process.execPath, FIXTURES.legacy];

  it('issue 14.3: a client that closes without DELETE loses its session and its server within http.abandonedSessionTimeout', async () => {
    const gateway = await start(LEGACY, ['--abandoned-session-timeout', '500']);
    const client = new Client({ name: 'leaves', version: '1' }, { capabilities: TASK_AWARE });
    const transport = httpTransport(gateway.url);
    await client.connect(transport);
    await client.listTools();
    const sessionId = transport.sessionId!;
    expect(children(gateway.child.pid!)).toHaveLength(1);
    // The SDK's close() ends its streams and sends no DELETE.
    await client.close();
    await gateway.logged('ending an abandoned session', 5_000);
    await gateway.logged('"msg":"upstream server exited', 5_000);
    expect(children(gateway.child.pid!)).toEqual([]);
    expect(sample(await metrics(gateway), 'taskgate_sessions_closed_total', { reason: 'abandoned' })).toBe(1);
    const gone = await fetch(gateway.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': sessionId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    expect(gone.status).toBe(404);
  });

  it('issue 14.3: an Inspector --cli run leaves no session and no server behind', async () => {
    const gateway = await start(LEGACY, ['--abandoned-session-timeout', '500']);
    const listed = await new Promise<string>((resolve, reject) =>
      execFile(
        NODE_22,
        [
          INSPECTOR,
          '--cli',
          gateway.url.href,
          '--transport',
          'http',
          '--method',
          'tools/list',
          '--format',
          'json',
          '-q',
        ],
        { timeout: 60_000 },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      ),
    );
    expect(listed).toContain('"name":"echo"');
    await gateway.logged('ending an abandoned session', 5_000);
    await gateway.logged('"msg":"upstream server exited', 5_000);
    expect(children(gateway.child.pid!)).toEqual([]);
    expect(sample(await metrics(gateway), 'taskgate_sessions_open')).toBe(0);
  });

  it('issue 14.3: a session whose task still runs is kept until the task ends, then reclaimed', async () => {
    const gateway = await start(LEGACY, ['--abandoned-session-timeout', '300', '--log-level', 'debug']);
    const client = new Client({ name: 'leaves', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(httpTransport(gateway.url));
    const created = await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 1_200 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    expect(created.task.status).toBe('working');
    await client.close();
    await gateway.logged('"status":"completed"', 10_000);
    expect(gateway.stderr).not.toContain('ending an abandoned session');
    expect(children(gateway.child.pid!)).toHaveLength(1);
    await gateway.logged('ending an abandoned session', 5_000);
    const text = await metrics(gateway);
    expect(sample(text, 'taskgate_sessions_closed_total', { reason: 'abandoned' })).toBe(1);
    expect(sample(text, 'taskgate_sessions_open')).toBe(0);
  });

  it('issue 14.3: a session whose server runs its own task is kept until the server says the task ended', async () => {
    const gateway = await start([process.execPath, FIXTURES.native], ['--abandoned-session-timeout', '300']);
    const client = new Client({ name: 'leaves', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(httpTransport(gateway.url));
    const created = await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 1_200 }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    const startedAt = Date.now();
    expect(created.task.status).toBe('working');
    await client.close();
    await gateway.logged('ending an abandoned session', 10_000);
    // Not before the server's task ended (1.2 s after it started), then within the timeout.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_100);
  });

  it('issue 14.3: a client that DELETEs its session is counted as deleted', async () => {
    const gateway = await start(LEGACY);
    const transport = httpTransport(gateway.url);
    const client = new Client({ name: 'polite', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(transport);
    await transport.terminateSession();
    await client.close();
    expect(sample(await metrics(gateway), 'taskgate_sessions_closed_total', { reason: 'deleted' })).toBe(1);
  });
});

/** Runs the built CLI to its end: its exit code and what it wrote to stderr. */
function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [TASKGATE, ...args],
      { timeout: 15_000 },
      (error, _out, stderr) => resolve({ code: error ? (error.code as number | null) : 0, stderr }),
    );
    child.stdin?.end();
  });
}

/** A port taken by another listener on the loopback, for the test's length. */
async function takenPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, server };
}

describe('issue 14.6: addresses that cannot be listened on', () => {
  const LEGACY = ['--', process.execPath, FIXTURES.legacy];
  const expectOneLine = (stderr: string, line: string): void => {
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(stderr).toBe(`taskgate: ${line}\n`);
  };

  it('issue 14.6: --listen and --admin-listen on a port in use say so in one line and exit 1', async () => {
    const { port, server } = await takenPort();
    try {
      const front = await run(['--listen', `127.0.0.1:${port}`, ...LEGACY]);
      expect(front.code).toBe(1);
      expectOneLine(front.stderr, `cannot listen on 127.0.0.1:${port}: the address is already in use`);
      // In stdio mode, and beside an HTTP front (whose own log lines come first).
      const stdio = await run(['--admin-listen', String(port), ...LEGACY]);
      expect(stdio.code).toBe(1);
      expectOneLine(stdio.stderr, `cannot listen on 127.0.0.1:${port}: the address is already in use`);
      const beside = await run(['--listen', '127.0.0.1:0', '--admin-listen', `127.0.0.1:${port}`, ...LEGACY]);
      expect(beside.code).toBe(1);
      expect(beside.stderr).not.toMatch(/^\s+at /m);
      expect(beside.stderr.trimEnd().split('\n').at(-1)).toBe(
        `taskgate: cannot listen on 127.0.0.1:${port}: the address is already in use`,
      );
    } finally {
      server.close();
    }
  });

  it('issue 14.6: an address not on this machine is named, in one line, exit 1', async () => {
    // TEST-NET-1 (RFC 5737): never assigned to a machine; a bind attempt sends nothing.
    const front = await run(['--listen', '192.0.2.1:8080', ...LEGACY]);
    expect(front.code).toBe(1);
    expectOneLine(front.stderr, 'cannot listen on 192.0.2.1:8080: the address is not one of this machine');
    const admin = await run(['--admin-listen', '192.0.2.1:8080', ...LEGACY]);
    expect(admin.code).toBe(1);
    expectOneLine(admin.stderr, 'cannot listen on 192.0.2.1:8080: the address is not one of this machine');
  });
});

describe('issue 27: a bare port, and a command that cannot start', () => {
  it('issue 27: --listen PORT binds the loopback, as --admin-listen PORT does', async () => {
    // The helper's own --listen 127.0.0.1:0 comes first; the last one given wins.
    const gateway = await start([process.execPath, FIXTURES.legacy], ['--listen', '0']);
    expect(gateway.url.hostname).toBe('127.0.0.1');
    const client = new Client({ name: 'bare-port', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(httpTransport(gateway.url));
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });

  it('issue 27: a command not on PATH is warned of once at start, then each refused session is one line, no stack', async () => {
    const gateway = await start(['no-such-command-27']);
    await gateway.logged('every new session is refused');
    for (const name of ['first', 'second']) {
      const client = new Client({ name, version: '1' }, { capabilities: TASK_AWARE });
      await expect(client.connect(httpTransport(gateway.url))).rejects.toThrow(
        /Cannot start the upstream server .*no-such-command-27/,
      );
    }
    // Each refusal's line may follow its answer: both are waited for.
    await gateway.logged('session refused', undefined, 2);
    const lines = gateway.stderr.split('\n').filter((line) => line !== '');
    const warned = lines.filter((line) => line.includes('every new session is refused'));
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0]!)).toMatchObject({
      level: 40,
      msg: 'the upstream command "no-such-command-27" is not found on PATH: every new session is refused until it can be started (/readyz answers 503 meanwhile)',
    });
    const refused = lines.filter((line) => line.includes('session refused'));
    expect(refused).toHaveLength(2);
    for (const line of refused) expect(JSON.parse(line)).toMatchObject({ level: 40 });
    expect(gateway.stderr).not.toContain('"stack"');
  });
});

async function readiness(gateway: Gateway): Promise<{ status: number; body: unknown }> {
  const response = await fetch(new URL('/readyz', gateway.url));
  return { status: response.status, body: await response.json() };
}

describe('issue 14.8: readiness says the upstream cannot start', () => {
  it('issue 14.8: /readyz is 503 naming a command not on PATH', async () => {
    const gateway = await start(['no-such-command-14-8']);
    expect(await readiness(gateway)).toEqual({
      status: 503,
      body: {
        status: 'upstream unavailable',
        cause: 'the upstream command "no-such-command-14-8" is not found on PATH',
      },
    });
  });

  it('issue 14.8: /readyz turns 200 once the command can be started, and a session then works', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'taskgate-14-8-'));
    try {
      const server = join(dir, 'server');
      const gateway = await start([server]);
      expect(await readiness(gateway)).toEqual({
        status: 503,
        body: {
          status: 'upstream unavailable',
          cause: `the upstream command "${server}" is not an executable file`,
        },
      });
      await writeFile(server, `#!/bin/sh\nexec "${process.execPath}" "${FIXTURES.legacy}"\n`);
      await chmod(server, 0o755);
      expect(await readiness(gateway)).toEqual({ status: 200, body: { status: 'ready' } });
      const client = new Client({ name: 'after', version: '1' }, { capabilities: TASK_AWARE });
      await client.connect(httpTransport(gateway.url));
      expect((await client.listTools()).tools.length).toBeGreaterThan(0);
      await client.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('issue 14.8: with --upstream-url, /readyz is 503 while the server refuses connections, 200 once it listens', async () => {
    const port = await freePort();
    const gateway = await start([], ['--upstream-url', `http://127.0.0.1:${port}/mcp?api_key=SECRET`]);
    expect(await readiness(gateway)).toEqual({
      status: 503,
      body: {
        status: 'upstream unavailable',
        cause: `the upstream server at http://127.0.0.1:${port} refuses connections`,
      },
    });
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    try {
      expect(await readiness(gateway)).toEqual({ status: 200, body: { status: 'ready' } });
    } finally {
      server.close();
    }
  });
});
