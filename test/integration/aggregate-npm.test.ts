/**
 * The real npm servers issue 32 names, behind one taskgate: @modelcontextprotocol/server-everything (tasks
 * of its own), server-filesystem and server-memory (none), on stdio and behind the HTTP front, with SDK v1
 * and v2 clients and the Inspector CLI: the merged lists under each server's prefix, a call on each, a task
 * on each (augmented on the two without tasks, server-everything's own) listed together, and a crash of
 * one failing only its calls.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ListRootsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { CheckedTransport } from '../helpers/checked-transport.js';
import { httpTransport } from '../helpers/http-client.js';
import { connectModern, type ModernConnection } from '../helpers/modern-client.js';
import { Gateway, TASKGATE, TASK_AWARE, connect, type Connection } from '../helpers/taskgate.js';
import { thrownBy } from '../helpers/thrown.js';

const root = (path: string): string => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const npmServer = (name: string): string => root(`node_modules/@modelcontextprotocol/${name}/dist/index.js`);
const node = process.execPath;

const dir = mkdtempSync(join(tmpdir(), 'taskgate-aggregate-npm-'));
const files = join(dir, 'files');
mkdirSync(files);
const HELLO = join(files, 'hello.txt');
writeFileSync(HELLO, 'hello from the files server');

/** server-memory keeps its graph in this file (by default it writes beside its own code). */
const upstreams = (memoryFile: string) => ({
  everything: { command: node, args: [npmServer('server-everything'), 'stdio'] },
  files: { command: node, args: [npmServer('server-filesystem'), files] },
  // Not restarted, so that its crash is for good.
  memory: {
    command: node,
    args: [npmServer('server-memory')],
    env: { MEMORY_FILE_PATH: join(dir, memoryFile) },
    restart: { enabled: false },
  },
});
let configs = 0;
const configFile = (): string => {
  const path = join(dir, `three-${++configs}.json`);
  writeFileSync(path, JSON.stringify({ upstreams: upstreams(`memory-${configs}.jsonl`) }));
  return path;
};

afterAll(() => rmSync(dir, { recursive: true, force: true }));

let open: Connection | undefined;
let modern: ModernConnection | undefined;
let gateway: Gateway | undefined;
afterEach(async () => {
  await open?.close();
  open = undefined;
  await modern?.close();
  modern = undefined;
  await gateway?.stop();
  gateway = undefined;
});

const text = (result: unknown): string =>
  ((result as { content: { text: string }[] }).content ?? []).map((part) => part.text).join('\n');

const rpcError = async (promise: Promise<unknown>): Promise<McpError> => {
  const error = await thrownBy(promise);
  expect(error).toBeInstanceOf(McpError);
  return error as McpError;
};

const ENTITY = { name: 'taskgate', entityType: 'gateway', observations: ['fronts three servers'] };

/** The tools every client must see, one or more of each server's, under its prefix. */
const EXPECTED_TOOLS = [
  'everything__echo',
  'everything__simulate-research-query',
  'files__read_text_file',
  'files__list_allowed_directories',
  'memory__create_entities',
  'memory__read_graph',
];

/** What a v1 client does through taskgate in front of the three: lists, a call on each, a task on each. */
async function listsCallsAndTasks(client: Client): Promise<void> {
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  expect(names).toEqual(expect.arrayContaining(EXPECTED_TOOLS));
  expect(names.every((name) => /^(everything|files|memory)__/.test(name))).toBe(true);

  expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'one' } }))).toBe(
    'Echo: one',
  );
  expect(text(await client.callTool({ name: 'files__read_text_file', arguments: { path: HELLO } }))).toBe(
    'hello from the files server',
  );
  await client.callTool({ name: 'memory__create_entities', arguments: { entities: [ENTITY] } });

  const task = async (name: string, args: object) =>
    (
      await client.request(
        { method: 'tools/call', params: { name, arguments: args, task: {} } },
        CreateTaskResultSchema,
      )
    ).task.taskId;
  const ids = {
    files: await task('files__read_text_file', { path: HELLO }),
    memory: await task('memory__read_graph', {}),
    everything: await task('everything__simulate-research-query', { topic: 'otters' }),
  };
  for (const [server, id] of Object.entries(ids)) expect(id.startsWith(`${server}__`)).toBe(true);
  const tasks = client.experimental.tasks;
  expect(text(await tasks.getTaskResult(ids.files, CallToolResultSchema))).toBe(
    'hello from the files server',
  );
  expect(text(await tasks.getTaskResult(ids.memory, CallToolResultSchema))).toContain('fronts three servers');
  expect(text(await tasks.getTaskResult(ids.everything, CallToolResultSchema))).toContain(
    'Research Report: otters',
  );
  const listed = (await tasks.listTasks()).tasks.map((listedTask) => listedTask.taskId);
  expect(listed).toEqual(expect.arrayContaining(Object.values(ids)));
}

/** server-filesystem asks the client for its roots: this client's are the one directory. */
function withRoots(client: Client): Client {
  client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: pathToFileURL(files).href }] }));
  return client;
}

/** A v2 client pinned to 2026-07-28: taskgate discovered, the merged list, a call on each. */
async function v2ListsAndCalls(connection: ModernConnection): Promise<void> {
  const { client } = connection;
  expect(client.getProtocolEra()).toBe('modern');
  expect(client.getServerVersion()).toMatchObject({ name: 'taskgate' });
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  expect(names).toEqual(expect.arrayContaining(EXPECTED_TOOLS));
  const call = async (name: string, args: Record<string, unknown>) =>
    text(await client.callTool({ name, arguments: args }));
  expect(await call('everything__echo', { message: 'v2' })).toBe('Echo: v2');
  expect(await call('files__list_allowed_directories', {})).toContain('taskgate-aggregate-npm-');
  expect(await call('memory__read_graph', {})).toContain('"entities"');
}

/** The pid of taskgate's child that runs `script`. */
function childRunning(taskgatePid: number, script: string): number {
  const children = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(taskgatePid)]).toString();
  const line = children.split('\n').find((entry) => entry.includes(script));
  if (line === undefined) throw new Error(`no child of taskgate runs ${script}: ${children}`);
  return Number(line.trim().split(/\s+/)[0]);
}

describe('server-everything, server-filesystem and server-memory behind one taskgate on stdio (issue 32)', () => {
  it('gives an SDK v1 client the merged lists, a call and a task on each, and fails only the calls of one that crashed', async () => {
    open = await connect('legacy', { upstream: [], flags: ['--config', configFile()] });
    const { client, transport, pid } = open;
    withRoots(client);
    await listsCallsAndTasks(client);

    process.kill(childRunning(pid!, npmServer('server-memory')), 'SIGKILL');
    const refused = await rpcError(client.callTool({ name: 'memory__read_graph', arguments: {} }));
    expect(refused.code).toBe(-32000);
    expect(refused.message).toMatch(/killed by SIGKILL/);
    // Once its Session has answered what was asked of it, the aggregator refuses the server's calls itself.
    await vi.waitFor(
      async () =>
        expect(
          (await rpcError(client.callTool({ name: 'memory__read_graph', arguments: {} }))).message,
        ).toMatch(/The server "memory" is gone/),
      { timeout: 15_000, interval: 200 },
    );
    expect(text(await client.callTool({ name: 'everything__echo', arguments: { message: 'still' } }))).toBe(
      'Echo: still',
    );
    expect(text(await client.callTool({ name: 'files__read_text_file', arguments: { path: HELLO } }))).toBe(
      'hello from the files server',
    );
    expect(transport.violations).toEqual([]);
  });

  it('gives an SDK v2 client the merged lists and a call on each', async () => {
    modern = await connectModern(
      { command: [node, TASKGATE, '--config', configFile()] },
      { probe: 'in-place' },
    );
    await v2ListsAndCalls(modern);
  });

  it('lists and calls through the Inspector CLI', async () => {
    const NODE_22 = root('test/inspector/node_modules/node/bin/node');
    const INSPECTOR = root(
      'test/inspector/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
    );
    const config = configFile();
    const inspector = async (args: string[]): Promise<string> => {
      const taskgate = ['--', node, TASKGATE, '--log-level', 'warn', '--config', config];
      const { stdout } = await promisify(execFile)(
        NODE_22,
        [INSPECTOR, '--cli', '--format', 'json', '-q', ...args, ...taskgate],
        { timeout: 60_000 },
      );
      return stdout;
    };
    const listed = await inspector(['--method', 'tools/list']);
    for (const name of EXPECTED_TOOLS) expect(listed).toContain(`"${name}"`);
    const read = await inspector([
      '--method',
      'tools/call',
      '--tool-name',
      'files__read_text_file',
      '--tool-arg',
      `path=${HELLO}`,
    ]);
    expect(read).toContain('hello from the files server');
    // Each Inspector run starts taskgate and its three servers afresh.
  }, 120_000);
});

describe('server-everything, server-filesystem and server-memory behind the HTTP front (issue 32)', () => {
  it('gives SDK v1 and v2 clients the merged lists, calls on each, and the v1 client a task on each', async () => {
    // Without auth the HTTP front lists a session's tasks only when told to (README, tasks.exposeList).
    gateway = await Gateway.start([], ['--config', configFile(), '--expose-task-list']);
    const transport = new CheckedTransport(httpTransport(gateway.url));
    const v1 = withRoots(
      new Client({ name: 'taskgate-test', version: '1.0.0' }, { capabilities: TASK_AWARE }),
    );
    await v1.connect(transport);
    try {
      await listsCallsAndTasks(v1);
      modern = await connectModern({ url: gateway.url });
      await v2ListsAndCalls(modern);
      expect(transport.violations).toEqual([]);
    } finally {
      await v1.close();
    }
  });
});
