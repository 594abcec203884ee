/**
 * taskgate as a sidecar (HTTP front → HTTP upstream) in front of real HTTP servers: server-everything
 * in its Streamable HTTP mode, and a fixture killed while a task's call runs on it.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { Gateway, TASK_AWARE } from '../helpers/taskgate.js';

const EVERYTHING = fileURLToPath(
  new URL('../../node_modules/@modelcontextprotocol/server-everything/dist/index.js', import.meta.url),
);

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function sidecarFor(url: string): Promise<Client> {
  const gateway = await Gateway.start([], ['--upstream-url', url]);
  cleanups.push(() => gateway.stop());
  const client = new Client({ name: 'sidecar-test', version: '1' }, { capabilities: TASK_AWARE });
  await client.connect(new StreamableHTTPClientTransport(gateway.url));
  cleanups.push(() => client.close());
  return client;
}

/** server-everything over Streamable HTTP on a free port; resolves once it accepts connections. */
async function startEverything(): Promise<string> {
  const { createServer } = await import('node:net');
  const probe = createServer().listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const port = (probe.address() as { port: number }).port;
  probe.close();
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanups.push(async () => {
    child.kill('SIGTERM');
    if (child.exitCode === null) await once(child, 'exit');
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not start: ${output}`)), 15_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (/listening/i.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
  });
  return `http://127.0.0.1:${port}/mcp`;
}

describe('taskgate as a sidecar', () => {
  it('serves server-everything in Streamable HTTP mode: its own task tool and tasks for the others', async () => {
    const client = await sidecarFor(await startEverything());
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
    expect(support['simulate-research-query']).toBe('required');
    expect(support.echo).toBe('optional');
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: { name: 'echo', arguments: { message: 'through the sidecar' }, task: {} },
      },
      CreateTaskResultSchema,
    );
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(JSON.stringify(result.content)).toContain('through the sidecar');
  });

  it('fails a running task clearly when the HTTP upstream is killed, and nothing hangs', async () => {
    const fixture = await startHttpFixture('legacy');
    cleanups.push(() => fixture.stop());
    const client = await sidecarFor(fixture.url);
    const { task } = await client.request(
      { method: 'tools/call', params: { name: 'sleep', arguments: { ms: 60_000 }, task: {} } },
      CreateTaskResultSchema,
    );
    await client.callTool({ name: 'echo', arguments: { text: 'the upstream has the call' } });
    const waiting = client.experimental.tasks
      .getTaskResult(task.taskId, CallToolResultSchema)
      .catch((error: unknown) => error);
    await fixture.stop('SIGKILL');
    const error = await waiting;
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32000);
    const failed = await client.experimental.tasks.getTask(task.taskId);
    expect(failed.status).toBe('failed');
    expect(failed.statusMessage).toMatch(/upstream|Upstream/);
    const plain = await client
      .callTool({ name: 'echo', arguments: { text: 'x' } })
      .catch((caught: unknown) => caught);
    expect(plain).toBeInstanceOf(McpError);
  });
});
