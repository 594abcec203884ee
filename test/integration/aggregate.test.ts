/**
 * Several real servers behind one taskgate process on stdio (issue 32): the SDK Client spawns taskgate
 * with `upstreams` (a config file) or `--servers` (a desktop client's mcpServers JSON) in front of the
 * legacy fixture (no tasks), the native fixture (tasks of its own) and @modelcontextprotocol/server-everything.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { httpTransport } from '../helpers/http-client.js';
import { sample } from '../helpers/prometheus.js';
import { FIXTURES, Gateway, TASK_AWARE, connect, type Connection } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);
const node = process.execPath;
const dir = mkdtempSync(join(tmpdir(), 'taskgate-aggregate-'));
let files = 0;
const file = (text: string, extension: string): string => {
  const path = join(dir, `servers-${++files}.${extension}`);
  writeFileSync(path, text);
  return path;
};

const THREE = {
  legacy: { command: node, args: [FIXTURES.legacy] },
  native: { command: node, args: [FIXTURES.native] },
  everything: { command: node, args: [EVERYTHING, 'stdio'] },
};

let open: Connection | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
  await gateway?.stop();
  gateway = undefined;
});

const start = async (flags: string[]): Promise<Connection> =>
  (open = await connect('legacy', { upstream: [], flags }));

const withConfig = (upstreams: object, more: string[] = []): Promise<Connection> =>
  start(['--config', file(JSON.stringify({ upstreams }), 'json'), ...more]);

const text = (result: unknown): string =>
  ((result as { content: { text: string }[] }).content[0] ?? { text: '' }).text;

const rpcError = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await thrownBy(promise);
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

/** The admin listener's URL, from its log line (it is logged before the servers start). */
/**
 * With `mute` never answering initialize, a slow-server grace of 300 ms and a list_changed window of 1 500
 * ms: the log names `mute` once the grace is up, and the list_changed a crash of `legacy` causes waits the
 * window out (the crash opens it; the client is told once it is up, not before).
 */
async function graceAndWindowSeen(
  stderr: () => string,
  sdk: Client,
  transport: CheckedTransport,
): Promise<void> {
  await vi.waitFor(
    () =>
      expect(stderr()).toMatch(/the server \\"mute\\" has not answered initialize 300 ms after the first/),
    { timeout: 5_000, interval: 50 },
  );
  const crashedAt = Date.now();
  await rpcError(sdk.callTool({ name: 'legacy__crash', arguments: {} }));
  await transport.received.waitFor(
    (message) => 'method' in message && message.method === 'notifications/tools/list_changed',
    'notifications/tools/list_changed',
    15_000,
  );
  // Less 50 ms: taskgate's timer counts from its event loop's cached time, which a busy loop took a few ms
  // before it handled the crash (CI saw 1 497 ms); a window not waited out is over at once.
  expect(Date.now() - crashedAt).toBeGreaterThanOrEqual(1_450);
}

const adminUrl = (stderr: () => string): Promise<URL> =>
  vi.waitFor(
    () => {
      const found = /"url":"([^"]+)","msg":"admin listener/.exec(stderr());
      if (found === null) throw new Error('no admin listener in the log yet');
      return new URL(found[1]!);
    },
    { timeout: 15_000, interval: 50 },
  );

const readyz = async (base: URL): Promise<{ status: number; body: unknown }> => {
  const response = await fetch(new URL('/readyz', base));
  return { status: response.status, body: await response.json() };
};

describe('three real servers behind one taskgate (issue 32)', () => {
  it('lists every server’s tools under its prefix and calls each', async () => {
    const { client, transport } = await withConfig(THREE);
    expect(client.getServerVersion()?.name).toBe('taskgate');
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(
      expect.arrayContaining(['legacy__echo', 'native__sleep-required', 'everything__echo']),
    );
    expect(names.every((name) => /^(legacy|native|everything)__/.test(name))).toBe(true);
    expect(text(await client.callTool({ name: 'legacy__echo', arguments: { text: 'one' } }))).toBe('one');
    expect(text(await client.callTool({ name: 'native__echo', arguments: { text: 'two' } }))).toBe('two');
    expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'three' } }))).toBe(
      'Echo: three',
    );
    const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
    expect(prompts.some((name) => name.startsWith('everything__'))).toBe(true);
    expect(transport.violations).toEqual([]);
  });

  it('runs an augmented task on the server without tasks and a native one on the task server, fetched by their ids', async () => {
    const { client, transport } = await withConfig(THREE);
    const call = (name: string, args: object) =>
      client.request(
        { method: 'tools/call', params: { name, arguments: args, task: {} } },
        CreateTaskResultSchema,
      );
    const augmented = await call('legacy__echo', { text: 'by taskgate' });
    const native = await call('native__sleep-required', { ms: 10 });
    expect(augmented.task.taskId).toMatch(/^legacy__/);
    expect(native.task.taskId).toMatch(/^native__/);
    const tasks = client.experimental.tasks;
    expect(text(await tasks.getTaskResult(augmented.task.taskId, CallToolResultSchema))).toBe('by taskgate');
    await tasks.getTaskResult(native.task.taskId, CallToolResultSchema);
    expect(await tasks.getTask(augmented.task.taskId)).toMatchObject({ status: 'completed' });
    expect(await tasks.getTask(native.task.taskId)).toMatchObject({
      taskId: native.task.taskId,
      status: 'completed',
    });
    const listed = (await tasks.listTasks()).tasks.map((task) => task.taskId);
    expect(listed).toEqual(expect.arrayContaining([augmented.task.taskId, native.task.taskId]));
    expect(transport.violations).toEqual([]);
  });

  it('refuses a tool name two servers mounted without prefix both list, naming both', async () => {
    const { client, stderr } = await withConfig({
      legacy: { ...THREE.legacy, prefix: false },
      native: { ...THREE.native, prefix: false },
    });
    const error = await rpcError(client.listTools());
    expect(error.message).toMatch(/"echo" is listed by server "legacy" and by server "native"/);
    expect(stderr()).toMatch(/tool name collision/);
  });

  it('accepts the mcpServers JSON of a desktop client as it is written', async () => {
    const desktop = {
      mcpServers: {
        'legacy fixture': { command: node, args: [FIXTURES.legacy] },
        everything: { command: node, args: [EVERYTHING, 'stdio'], env: { UNUSED: '1' } },
        gone: { command: 'no-such-command', disabled: true },
      },
      globalShortcut: '',
    };
    const { client } = await start(['--servers', file(JSON.stringify(desktop, null, 2), 'json')]);
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['legacy-fixture__echo', 'everything__echo']));
    expect(text(await client.callTool({ name: 'legacy-fixture__echo', arguments: { text: 'moved' } }))).toBe(
      'moved',
    );
  });

  it('leaves out a server that cannot be started, and says why to the calls to it', async () => {
    const { client, stderr } = await withConfig({
      legacy: THREE.legacy,
      missing: { command: join(dir, 'no-such-server') },
    });
    expect((await client.listTools()).tools.every((tool) => tool.name.startsWith('legacy__'))).toBe(true);
    const refused = await rpcError(client.callTool({ name: 'missing__anything', arguments: {} }));
    expect(refused.code).toBe(-32000);
    expect(refused.message).toMatch(/The server "missing" is gone \(it could not be started/);
    expect(stderr()).toMatch(/the server \\"missing\\" could not be started/);
  });

  it('fails only the calls to a server that crashed; the others keep serving', async () => {
    // Its own restart policy: not restarted (the others would be).
    const { client, stderr } = await withConfig({
      ...THREE,
      legacy: { ...THREE.legacy, restart: { enabled: false } },
    });
    await client.listTools();
    expect((await rpcError(client.callTool({ name: 'legacy__crash', arguments: {} }))).code).toBe(-32000);
    const later = await rpcError(client.callTool({ name: 'legacy__echo', arguments: { text: 'x' } }));
    expect(later.code).toBe(-32000);
    expect(later.message).toMatch(/legacy/);
    expect(text(await client.callTool({ name: 'native__echo', arguments: { text: 'still' } }))).toBe('still');
    expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'here' } }))).toBe(
      'Echo: here',
    );
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    expect(names.some((name) => name.startsWith('legacy__'))).toBe(false);
    expect(names).toContain('native__echo');
    expect(stderr()).toMatch(/the server \\"legacy\\".*only its calls fail/);
  });

  it('waits on a slow server and gathers list changes as the config’s aggregate settings say', async () => {
    const { client, transport, stderr } = await start([
      '--config',
      file(
        JSON.stringify({
          upstreams: {
            legacy: { ...THREE.legacy, restart: { enabled: false } },
            native: THREE.native,
            // It never answers initialize: the handshake goes on without it once the grace is up.
            mute: { command: node, args: ['-e', 'process.stdin.resume()'] },
          },
          aggregate: { slowServerGrace: 300, listChangedWindow: 1_500 },
        }),
        'json',
      ),
    ]);
    await graceAndWindowSeen(stderr, client, transport);
  });

  it('answers /readyz on the admin listener with each server by name and its state', async () => {
    const { client, stderr } = await withConfig(
      {
        legacy: { ...THREE.legacy, restart: { enabled: false } },
        native: THREE.native,
        missing: { command: join(dir, 'no-such-server') },
      },
      ['--admin-listen', '127.0.0.1:0'],
    );
    const admin = await adminUrl(stderr);
    expect(await readyz(admin)).toEqual({
      status: 200,
      body: {
        status: 'ready',
        servers: {
          legacy: { state: 'ready' },
          native: { state: 'ready' },
          missing: { state: 'gone', cause: expect.stringMatching(/could not be started/) },
        },
      },
    });
    expect((await rpcError(client.callTool({ name: 'legacy__crash', arguments: {} }))).code).toBe(-32000);
    // Its Session answers what was asked a moment longer, then the server is gone for the aggregator too.
    await vi.waitFor(
      async () =>
        expect((await readyz(admin)).body).toMatchObject({ servers: { legacy: { state: 'gone' } } }),
      { timeout: 15_000, interval: 100 },
    );
    expect(await readyz(admin)).toMatchObject({
      status: 200,
      body: { status: 'ready', servers: { native: { state: 'ready' } } },
    });
  });
});

describe('several servers behind the HTTP front (issue 32)', () => {
  it('answers /readyz with each server by name: ready while one of them could be started', async () => {
    const config = file(
      JSON.stringify({
        upstreams: { legacy: THREE.legacy, missing: { command: join(dir, 'no-such-server') } },
      }),
      'json',
    );
    gateway = await Gateway.start([], ['--config', config]);
    expect(await readyz(gateway.url)).toEqual({
      status: 200,
      body: {
        status: 'ready',
        servers: {
          legacy: { state: 'ready' },
          missing: { state: 'unavailable', cause: expect.stringMatching(/not an executable file/) },
        },
      },
    });
  });

  const client = async (
    g: Gateway,
    token?: string,
  ): Promise<{ client: Client; transport: CheckedTransport }> => {
    const headers = token === undefined ? undefined : { authorization: `Bearer ${token}` };
    const transport = new CheckedTransport(
      httpTransport(g.url, headers === undefined ? {} : { requestInit: { headers } }),
    );
    const sdk = new Client({ name: 'taskgate-test', version: '1.0.0' }, { capabilities: TASK_AWARE });
    await sdk.connect(transport);
    return { client: sdk, transport };
  };

  it('gives each HTTP session’s servers the grace and the list_changed window the flags set', async () => {
    const config = file(
      JSON.stringify({
        upstreams: {
          legacy: THREE.legacy,
          native: THREE.native,
          mute: { command: node, args: ['-e', 'process.stdin.resume()'] },
        },
      }),
      'json',
    );
    gateway = await Gateway.start(
      [],
      [
        '--config',
        config,
        '--no-upstream-restart',
        '--slow-server-grace',
        '300',
        '--list-changed-window',
        '1500',
      ],
    );
    const g = gateway;
    const { client: sdk, transport } = await client(g);
    await graceAndWindowSeen(() => g.stderr, sdk, transport);
    await sdk.close();
  });

  it('gives each client session the merged lists, calls and tasks of every server, and isolates a crash', async () => {
    const config = file(
      JSON.stringify({ upstreams: { legacy: THREE.legacy, native: THREE.native } }),
      'json',
    );
    gateway = await Gateway.start([], ['--config', config, '--no-upstream-restart']);
    const first = await client(gateway);
    const second = await client(gateway);
    for (const { client: sdk } of [first, second]) {
      const names = (await sdk.listTools()).tools.map((tool) => tool.name);
      expect(names).toEqual(expect.arrayContaining(['legacy__echo', 'native__echo']));
    }
    const { task } = await first.client.request(
      { method: 'tools/call', params: { name: 'legacy__echo', arguments: { text: 'over http' }, task: {} } },
      CreateTaskResultSchema,
    );
    expect(task.taskId).toMatch(/^legacy__/);
    const result = await first.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(text(result)).toBe('over http');
    // What the aggregator refuses itself goes on the request's own stream too.
    expect((await rpcError(first.client.callTool({ name: 'nobody__echo', arguments: {} }))).code).toBe(
      -32602,
    );
    // The first session's legacy server crashes: its calls fail, the second session's servers are its own.
    expect((await rpcError(first.client.callTool({ name: 'legacy__crash', arguments: {} }))).code).toBe(
      -32000,
    );
    expect(text(await first.client.callTool({ name: 'native__echo', arguments: { text: 'still' } }))).toBe(
      'still',
    );
    expect(text(await second.client.callTool({ name: 'legacy__echo', arguments: { text: 'mine' } }))).toBe(
      'mine',
    );
    expect([...first.transport.violations, ...second.transport.violations]).toEqual([]);
    await first.client.close();
    await second.client.close();
  });

  it('binds each server’s tasks to the caller: another identity cannot read them, augmented or native', async () => {
    const config = file(
      JSON.stringify({ upstreams: { legacy: THREE.legacy, native: THREE.native } }),
      'json',
    );
    const alice = 'alice-token-0123456789abcdef';
    const bob = 'bob-token-0123456789abcdefgh';
    gateway = await Gateway.start(
      [],
      ['--config', config, '--auth-token', `${alice}=alice`, '--auth-token', `${bob}=bob`],
    );
    const mine = await client(gateway, alice);
    const theirs = await client(gateway, bob);
    const call = (name: string, args: object) =>
      mine.client.request(
        { method: 'tools/call', params: { name, arguments: args, task: {} } },
        CreateTaskResultSchema,
      );
    for (const { task } of [
      await call('legacy__echo', { text: 'a' }),
      await call('native__echo', { text: 'n' }),
    ]) {
      await mine.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
      expect((await rpcError(theirs.client.experimental.tasks.getTask(task.taskId))).code).toBe(-32602);
      expect((await rpcError(theirs.client.experimental.tasks.cancelTask(task.taskId))).code).toBe(-32602);
    }
    await mine.client.close();
    await theirs.client.close();
  });

  it('names each task’s server on /metrics, in the dashboard’s data and in its Server column', async () => {
    const config = file(
      JSON.stringify({ upstreams: { legacy: THREE.legacy, native: THREE.native } }),
      'json',
    );
    gateway = await Gateway.start([], ['--config', config]);
    const { client: sdk, transport } = await client(gateway);
    const { task } = await sdk.request(
      { method: 'tools/call', params: { name: 'legacy__echo', arguments: { text: 'counted' }, task: {} } },
      CreateTaskResultSchema,
    );
    await sdk.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    // The native server's own task, passed through: the dashboard names its server too.
    const own = await sdk.request(
      { method: 'tools/call', params: { name: 'native__echo', arguments: { text: 'its own' }, task: {} } },
      CreateTaskResultSchema,
    );
    await sdk.experimental.tasks.getTaskResult(own.task.taskId, CallToolResultSchema);
    const url = gateway.url;
    const metrics = await (await fetch(new URL('/metrics', url))).text();
    expect(sample(metrics, 'taskgate_tasks_created_total', { tool: 'echo', server: 'legacy' })).toBe(1);
    expect(
      sample(metrics, 'taskgate_tasks_finished_total', {
        tool: 'echo',
        server: 'legacy',
        status: 'completed',
      }),
    ).toBe(1);
    // The native server's own task is counted apart, under its server.
    const native = { tool: 'echo', server: 'native' };
    expect(sample(metrics, 'taskgate_upstream_tasks_created_total', native)).toBe(1);
    const ended = { ...native, status: 'completed' };
    expect(sample(metrics, 'taskgate_upstream_tasks_finished_total', ended)).toBe(1);
    expect(sample(metrics, 'taskgate_upstream_task_duration_seconds_count', ended)).toBe(1);
    expect(sample(metrics, 'taskgate_tasks_created_total', native)).toBeUndefined();
    const data = (await (await fetch(new URL('/dashboard/data', url))).json()) as { recent: unknown[] };
    expect(data.recent).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ tool: 'echo', server: 'legacy', status: 'completed', runBy: 'taskgate' }),
        expect.objectContaining({ tool: 'echo', server: 'native', status: 'completed', runBy: 'server' }),
      ]),
    );
    expect(data.recent).toHaveLength(2);
    const page = await (await fetch(new URL('/dashboard', url))).text();
    expect(page).toContain('<td class="tool">echo</td><td class="server">legacy</td>');
    expect(transport.violations).toEqual([]);
    await sdk.close();
  });
});
