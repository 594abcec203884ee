/**
 * taskgate as a sidecar (HTTP front → HTTP upstream) in front of real HTTP servers: server-everything
 * in its Streamable HTTP mode, and a fixture killed while a task's call runs on it.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { startEverythingHttp } from '../helpers/everything-http.js';
import { startHttpFixture } from '../helpers/http-fixture.js';
import { Gateway, TASK_AWARE } from '../helpers/taskgate.js';

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

/** server-everything over Streamable HTTP, stopped after the test. */
async function startEverything(): Promise<string> {
  const everything = await startEverythingHttp();
  cleanups.push(everything.stop);
  return everything.url;
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
