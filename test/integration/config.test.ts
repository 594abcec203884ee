/**
 * The built taskgate driven by config files, TASKGATE_* variables and flags: what starts, what is refused
 * (and that nothing starts then), check-config, print-config, --help, and per-tool timeout and
 * immediateResponse end to end against the legacy fixture.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  type JSONRPCMessage,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { FIXTURES, RawPeer, TASKGATE, connect, type Connection } from '../helpers/taskgate.js';

const IMMEDIATE_RESPONSE = 'io.modelcontextprotocol/model-immediate-response';
const CONFIG_DIR = fileURLToPath(new URL('../../config/', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'taskgate-config-it-'));
let files = 0;
const configFile = (text: string, extension = 'yaml'): string => {
  const path = join(dir, `taskgate-${++files}.${extension}`);
  writeFileSync(path, text);
  return path;
};

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built taskgate to its end (it must end on its own: these are not proxy runs). */
async function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [TASKGATE, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

let connection: Connection | undefined;
let peer: RawPeer | undefined;
afterEach(async () => {
  expect(connection?.transport.violations ?? []).toEqual([]);
  await connection?.close();
  await peer?.stop();
  connection = undefined;
  peer = undefined;
});

describe('the example configs in config/', () => {
  const examples = readdirSync(CONFIG_DIR).filter((name) => /\.(ya?ml|json)$/.test(name));
  /** The secrets an example says belong in the environment. */
  const environment: Record<string, Record<string, string>> = {
    'replicas.yaml': { TASKGATE_STORE_CURSOR_SECRET: 'the same secret on every replica' },
    'oauth-upstream.yaml': { UPSTREAM_CLIENT_SECRET: 'taskgate-secret-at-the-authorization-server' },
    'oauth.yaml': { INTROSPECTION_CLIENT_SECRET: 'taskgate-secret-at-the-authorization-server' },
  };

  it('has the examples the README points to', () => {
    expect(examples).toEqual(
      expect.arrayContaining(['stdio.yaml', 'strict.yaml', 'replicas.yaml', 'sidecar.yaml']),
    );
  });

  it.each(examples)('check-config accepts %s', async (name) => {
    const { code, stderr, stdout } = await run(
      ['check-config', join(CONFIG_DIR, name)],
      environment[name] ?? {},
    );
    expect(stderr).toMatch(new RegExp(`${name}: ok: upstream "`));
    expect(stdout).toBe('');
    expect(code).toBe(0);
  });

  it('replicas.yaml says which secret is missing when the environment lacks it', async () => {
    const { code, stderr } = await run(['check-config', join(CONFIG_DIR, 'replicas.yaml')]);
    expect(code).toBe(1);
    expect(stderr).toContain('store.cursorSecret: required with store.url');
  });

  it('strict.yaml makes every tool required', async () => {
    connection = await connect('legacy', { flags: ['--config', join(CONFIG_DIR, 'strict.yaml')] });
    const { tools } = await connection.client.listTools();
    expect(new Set(tools.map((tool) => tool.execution?.taskSupport))).toEqual(new Set(['required']));
  });
});

describe('a bad config', () => {
  it('starts nothing, lists every problem and exits 1', async () => {
    const marker = join(dir, 'upstream-started');
    const server = `require('node:fs').writeFileSync(${JSON.stringify(marker)}, 'started')`;
    const upstream = `upstream:\n  command: ${JSON.stringify(process.execPath)}\n  args: ['-e', ${JSON.stringify(server)}]\n`;
    const bad = configFile(
      `${upstream}tasks:\n  maxTtl: -5\n  pollIntervall: 10\ntools:\n  - match: x\n    taskSupport: sometimes\n`,
    );
    const refused = await run(['--config', bad]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      [
        `taskgate: Invalid configuration (${bad}):`,
        '  - tasks.maxTtl: expected an integer from 1 to 2592000000, got -5 (line 5)',
        '  - tasks: unknown key "pollIntervall" (did you mean "pollInterval"?) (line 6)',
        '  - tools[0].taskSupport: expected one of required, optional, forbidden, passthrough, got "sometimes" (line 9)',
        '',
      ].join('\n'),
    );
    expect(existsSync(marker)).toBe(false);

    // The same upstream with a good config does start (and, as it never answers, taskgate then exits 1).
    const started = await run(['--config', configFile(upstream)]);
    expect(existsSync(marker)).toBe(true);
    expect(started.stderr).toContain('stopped before it answered initialize');
  });

  it('names the problems of variables and flags too, each by its name', async () => {
    const { code, stderr } = await run(['--max-tasks=0'], { TASKGATE_POLL_INTERVAL: 'often' });
    expect(code).toBe(1);
    expect(stderr).toContain('TASKGATE_POLL_INTERVAL: expected an integer from 1 to 86400000, got "often"');
    expect(stderr).toContain('--max-tasks: expected a positive integer, got 0');
  });

  it('issue 13.18: refuses a port that does not exist, instead of dying with a stack trace', async () => {
    const { code, stderr } = await run(['--listen', '127.0.0.1:99999']);
    expect(code).toBe(1);
    expect(stderr).toBe(
      'taskgate: Invalid configuration:\n  - --listen: port 99999 does not exist: expected a port from 0 to 65535 (0 picks a free one), got "127.0.0.1:99999"\n',
    );
  });

  it('issue 13.17: refuses a short --auth-token without echoing it', async () => {
    const { code, stderr } = await run(['--listen', '127.0.0.1:0', '--auth-token', 'shortsecret=alice']);
    expect(code).toBe(1);
    expect(stderr).toContain('expected a string of at least 16 characters, got a string of 11 characters');
    expect(stderr).not.toContain('shortsecret');
  });

  it('check-config exits 1 with the problems', async () => {
    const { code, stderr } = await run(['check-config', configFile('tools:\n  - match: a\n    ttl: -5\n')]);
    expect(code).toBe(1);
    expect(stderr).toContain('tools[0].ttl: expected an integer from 1 to 2592000000, got -5 (line 3)');
  });
});

describe('usage errors exit 2', () => {
  it.each([
    [['--max-task', '5'], 'unknown flag --max-task (did you mean --max-tasks?)'],
    [['node', 'server.js'], 'unexpected argument "node"'],
    [['check-config'], 'check-config needs the config file'],
    [['--default-ttl', 'soon'], '--default-ttl expects a number, got "soon"'],
  ])('%j', async (args, message) => {
    const { code, stderr, stdout } = await run(args);
    expect(stderr).toContain(`taskgate: ${message}`);
    expect(stderr).toContain('Run "taskgate --help" for the flags.');
    expect(stdout).toBe('');
    expect(code).toBe(2);
  });
});

describe('--help, --version and print-config print to stdout', () => {
  it('--help lists the flags with their defaults', async () => {
    const { code, stdout } = await run(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/--max-ttl MS +largest ttl granted, whatever is asked \(default 86400000 = 1 d\)/);
  });

  it('--version prints the package version', async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(await run(['--version'])).toEqual({ code: 0, stdout: `taskgate ${version}\n`, stderr: '' });
  });

  it('print-config prints the effective config as YAML, secrets masked', async () => {
    const file = configFile(
      [
        'upstream:',
        '  command: npx',
        '  args: [some-server, --api-key, k1]',
        '  env: { SERVER_TOKEN: "${SERVER_SECRET_FOR_THE_TEST}" }',
        'tasks: { maxTtl: 1000, defaultTtl: 1000 }',
        'tools:',
        '  - { match: "slow_*", timeout: 500 }',
      ].join('\n'),
    );
    const { code, stdout, stderr } = await run(['print-config', '--config', file, '--max-ttl', '3000'], {
      SERVER_SECRET_FOR_THE_TEST: 'hunter2',
      TASKGATE_MAX_TTL: '2000',
      TASKGATE_DEFAULT_TTL: '2000',
    });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).not.toContain('hunter2');
    expect(stdout).not.toContain('k1');
    const printed = parse(stdout) as Record<string, Record<string, unknown>>;
    expect(printed.upstream).toEqual({
      command: 'npx',
      args: ['some-server', '--api-key', '********'],
      env: { SERVER_TOKEN: '********' },
      sharing: 'session',
      poolSize: 4,
    });
    expect(printed.tasks).toMatchObject({ maxTtl: 3000, defaultTtl: 2000, maxTasks: 10000 });
    expect(printed.tools).toEqual([{ match: 'slow_*', timeout: 500 }]);
  });
});

describe('a proxy run configured by file, variables and flags', () => {
  it('takes the upstream from the file when no command follows "--"', async () => {
    const file = configFile(
      `upstream:\n  command: ${JSON.stringify(process.execPath)}\n  args: [${JSON.stringify(FIXTURES.legacy)}]\n`,
    );
    peer = RawPeer.start(['--config', file]);
    peer.send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const response = await peer.response(1);
    expect(response.result).toMatchObject({ serverInfo: { name: 'legacy-fixture' } });
  });

  it('lets flags win over variables, and variables over the file', async () => {
    // ttl = min(maxTtl, defaultTtl): 4500 only if the flag's maxTtl and the variable's defaultTtl won.
    const file = configFile('tasks:\n  maxTtl: 2000\n  defaultTtl: 4000\n  pollInterval: 1500\n');
    connection = await connect('legacy', {
      flags: ['--config', file, '--max-ttl', '4500'],
      env: { TASKGATE_MAX_TTL: '9000', TASKGATE_DEFAULT_TTL: '5000' },
    });
    const { task } = await connection.client.request(
      { method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, task: {} } },
      CreateTaskResultSchema,
    );
    expect(task).toMatchObject({ ttl: 4500, pollInterval: 1500 });
  });
});

describe('per-tool rules from a config file', () => {
  const rules = configFile(
    [
      'tools:',
      '  - match: sleep',
      '    timeout: 300',
      '  - match: echo',
      '    immediateResponse: Echoing; the text will follow.',
    ].join('\n'),
  );

  it('fails a task that outlives its timeout, saying so, and cancels its call upstream', async () => {
    const c = (connection = await connect('legacy', { flags: ['--config', rules] }));
    const { task } = await c.client.request(
      {
        method: 'tools/call',
        params: { name: 'sleep', arguments: { ms: 20_000, label: 'timed-out' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    await c.transport.received.waitFor(
      (message: JSONRPCMessage) =>
        'method' in message &&
        message.method === 'notifications/tasks/status' &&
        message.params?.taskId === task.taskId &&
        message.params.status === 'failed',
      'the failed status of the timed-out task',
    );
    const failed = await c.client.experimental.tasks.getTask(task.taskId);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toBe('Task exceeded its timeout of 300 ms; the tool call was cancelled');

    const cancelled = await c.client.callTool(
      { name: 'cancelled-calls', arguments: {} },
      CallToolResultSchema,
    );
    expect(cancelled.content).toEqual([{ type: 'text', text: JSON.stringify(['timed-out']) }]);
  });

  it('returns the immediateResponse with the CreateTaskResult, and only for its tool', async () => {
    const c = (connection = await connect('legacy', { flags: ['--config', rules] }));
    const call = (name: string, args: Record<string, unknown>) =>
      c.client.request(
        { method: 'tools/call', params: { name, arguments: args, task: {} } },
        CreateTaskResultSchema,
      );
    const echo = await call('echo', { text: 'x' });
    expect(echo._meta?.[IMMEDIATE_RESPONSE]).toBe('Echoing; the text will follow.');
    const other = await call('fail', { message: 'x' });
    expect(other._meta?.[IMMEDIATE_RESPONSE]).toBeUndefined();
  });
});
