/**
 * No upstream server process outlives its reason (issue 27): the server runs in a process group of its own
 * and the whole group is stopped, so a wrapper (`sh -c`, `npx`) never leaves the real server behind, even
 * one that keeps a timer alive once its input ends; taskgate itself stops at once when nothing runs, well
 * within the 2 s a desktop client gives it, and a taskgate killed outright leaves nothing behind either
 * (its watchdog). Real processes throughout; "nothing left" is read from /proc, by pid.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { descendantsOf, killAll, stillRunning } from '../helpers/processes.js';
import { Gateway, RawPeer, TASK_AWARE, TASKGATE, latestUpstreamPid } from '../helpers/taskgate.js';

const LINGERING = fileURLToPath(new URL('../fixtures/lingering-server.js', import.meta.url));
/** A wrapper that stays the server's parent (a last command of its own, so it cannot exec the server). */
const WRAPPED = ['sh', '-c', `"${process.execPath}" "${LINGERING}"; echo "the fixture ended" >&2`];
/** The README's own set-up, without the registry: npx running the installed server-everything. */
const NPX_EVERYTHING = ['npx', '--no-install', 'mcp-server-everything', 'stdio'];

/** Processes a test saw start: whatever still runs at its end is killed, so that no test leaves any. */
let seen: number[] = [];
let peer: RawPeer | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  if (peer?.alive) peer.child.kill('SIGKILL');
  await gateway?.stop();
  killAll(await stillRunning(seen, 0));
  seen = [];
  peer = gateway = undefined;
});

/** The running processes of taskgate's upstream: its server (the wrapper) and everything below it. */
const upstreamProcesses = (stderr: string): number[] => {
  const pid = latestUpstreamPid(stderr);
  return [pid, ...descendantsOf(pid)];
};

interface DesktopClient {
  /** The pid of taskgate, which the client spawned. */
  pid: number;
  stderr: () => string;
  /** What a desktop client does on quit: stdin closed, SIGTERM 2 s later, SIGKILL 2 s after that. */
  close(): Promise<void>;
}

/** A desktop client (the SDK's StdioClientTransport, v1 or v2) that spawned taskgate in front of `upstream`. */
async function desktop(
  sdk: 'v1' | 'v2',
  upstream: string[],
  task?: { name: string; arguments: Record<string, unknown>; task: object },
): Promise<DesktopClient> {
  const params = {
    command: process.execPath,
    args: [TASKGATE, '--log-level', 'info', '--', ...upstream],
    stderr: 'pipe' as const,
  };
  let stderr = '';
  if (sdk === 'v1') {
    const transport = new StdioClientTransport(params);
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const client = new Client({ name: 'desktop-v1', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(transport);
    await client.listTools();
    if (task) await client.request({ method: 'tools/call', params: task }, CreateTaskResultSchema);
    return { pid: transport.pid!, stderr: () => stderr, close: () => client.close() };
  }
  const transport = new StdioClientTransportV2(params);
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new ClientV2({ name: 'desktop-v2', version: '1' }, { capabilities: {} });
  await client.connect(transport);
  await client.listTools();
  // SDK v2 2.4.0 has no tasks: its plain call of a task-required tool is unwrapped by taskgate.
  if (task)
    expect((await client.callTool({ name: task.name, arguments: task.arguments })).isError).toBeFalsy();
  return { pid: transport.pid!, stderr: () => stderr, close: () => client.close() };
}

describe('a desktop client quits (stdin closed, then SIGTERM after 2 s, then SIGKILL)', () => {
  it.each([
    {
      sdk: 'v1' as const,
      name: 'npx server-everything, after one of its own tasks (a timer it keeps)',
      upstream: NPX_EVERYTHING,
      task: { name: 'simulate-research-query', arguments: { topic: 'lifecycle' }, task: { ttl: 60_000 } },
    },
    {
      sdk: 'v2' as const,
      name: 'npx server-everything, after its own task, unwrapped for the client (a timer it keeps)',
      upstream: NPX_EVERYTHING,
      task: { name: 'simulate-research-query', arguments: { topic: 'lifecycle' }, task: { ttl: 60_000 } },
    },
    { sdk: 'v2' as const, name: 'sh -c around a server that outlives its input', upstream: WRAPPED },
    { sdk: 'v1' as const, name: 'sh -c around a server that outlives its input', upstream: WRAPPED },
  ])('SDK $sdk, $name: taskgate exits before the SIGTERM and leaves no process', async (c) => {
    const client = await desktop(c.sdk, c.upstream, c.task);
    const server = upstreamProcesses(client.stderr());
    // The wrapper and the real server under it, and the watchdog beside them.
    const all = (seen = descendantsOf(client.pid));
    expect(server.length).toBeGreaterThanOrEqual(2);
    expect(all).toEqual(expect.arrayContaining(server));

    const started = performance.now();
    await client.close();
    // The client's close settles when taskgate has exited, or after its 2 s wait and SIGTERM.
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await stillRunning(all, 3_000)).toEqual([]);
    expect(client.stderr()).toMatch(
      /upstream server was killed by SIGTERM: taskgate sent its process group SIGTERM/,
    );
  });
});

describe('taskgate over stdio, stopped with nothing running', () => {
  it('stops the server at once on SIGTERM, without a drain, and exits 0', async () => {
    const p = (peer = RawPeer.start(['--log-level', 'info', '--', ...WRAPPED]));
    await p.initialize();
    const server = (seen = upstreamProcesses(p.stderr));
    expect(server.length).toBe(2);

    const started = performance.now();
    p.child.kill('SIGTERM');
    const [code] = await p.exited;
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(code).toBe(0);
    expect(await stillRunning(server, 3_000)).toEqual([]);
    expect(p.stderr).toContain('shutting down: no task running');
    expect(p.stderr).not.toContain('letting running tasks finish');
  });

  it('SIGKILLed itself, leaves its server to the watchdog, which stops the whole group', async () => {
    const p = (peer = RawPeer.start(['--log-level', 'info', '--', ...WRAPPED], {
      FIXTURE_IGNORE_SIGTERM: '1',
    }));
    await p.initialize();
    const server = upstreamProcesses(p.stderr);
    seen = descendantsOf(p.child.pid!);
    expect(server.length).toBe(2);

    p.child.kill('SIGKILL');
    await p.exited;
    // SIGTERM, and SIGKILL a second later for the server that ignores it; then the watchdog is gone too.
    expect(await stillRunning(seen, 5_000)).toEqual([]);
  });
});

describe('Ctrl-C in a terminal (SIGINT to taskgate’s process group)', () => {
  it('does not reach the server: the running task finishes in the drain, its result stays fetchable a moment, then everything stops', async () => {
    const p = (peer = RawPeer.start(
      // A grace of twice the task's length, and the results' window (at most the grace) 3 s, not 5.
      ['--log-level', 'info', '--shutdown-grace', '3000', '--', process.execPath, LINGERING],
      {},
      { detached: true },
    ));
    await p.initialize();
    seen = descendantsOf(p.child.pid!);
    p.send({
      jsonrpc: '2.0',
      id: 'task',
      method: 'tools/call',
      params: { name: 'sleep', arguments: { ms: 1_500 }, task: {} },
    });
    const taskId = ((await p.response('task')).result as { task: { taskId: string } }).task.taskId;
    p.send({ jsonrpc: '2.0', id: 'result', method: 'tasks/result', params: { taskId } });

    process.kill(-p.child.pid!, 'SIGINT');
    await p.logged('letting running tasks finish');
    expect((await p.response('result', 10_000)).result).toMatchObject({
      content: [{ type: 'text', text: 'slept 1500 ms' }],
    });
    // The drain is over, and a client that polls still learns how its task ended.
    await p.logged('stay fetchable a moment longer');
    p.send({ jsonrpc: '2.0', id: 'after', method: 'tasks/get', params: { taskId } });
    expect((await p.response('after')).result).toMatchObject({ status: 'completed' });
    const [code] = await p.exited;
    expect(code).toBe(0);
    expect(await stillRunning(seen, 3_000)).toEqual([]);
  });
});

describe('an HTTP gateway session that ends', () => {
  it('stops its npx server’s whole group on DELETE and logs its exit; SIGTERM then leaves nothing', async () => {
    const g = (gateway = await Gateway.start(NPX_EVERYTHING, ['--log-level', 'info']));
    const transport = new StreamableHTTPClientTransport(g.url);
    const client = new Client({ name: 'http', version: '1' }, { capabilities: TASK_AWARE });
    await client.connect(transport);
    await client.listTools();
    await client.request(
      {
        method: 'tools/call',
        params: { name: 'simulate-research-query', arguments: { topic: 'lifecycle' }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const server = (seen = upstreamProcesses(g.stderr));
    expect(server.length).toBeGreaterThanOrEqual(2);

    await transport.terminateSession();
    expect(await stillRunning(server, 5_000)).toEqual([]);
    await g.logged('upstream server was killed by SIGTERM');

    seen = descendantsOf(g.child.pid!);
    await g.stop();
    expect((await g.exited)[0]).toBe(0);
    expect(await stillRunning(seen, 3_000)).toEqual([]);
  });
});
