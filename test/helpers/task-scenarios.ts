/**
 * The receiver side of tasks as a task-aware client sees it, one function per scenario, each making its
 * own assertions on a connected client: test/unit/in-process-task-scenarios.test.ts runs them all in
 * process (augment, pass through, the native server on its own), test/integration/task-scenarios.test.ts
 * runs a few of them over each topology's real pipes and sockets.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
  type ElicitRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import type { CheckedTransport } from './checked-transport.js';

const RELATED = 'io.modelcontextprotocol/related-task';

/** A client connected to the fixture's tools (legacy-fixture.js or native-fixture.js), directly or not. */
export interface ScenarioPeer {
  client: Client;
  /** What the client received, checked against the schemas. */
  transport: CheckedTransport;
}

const createTask = (
  peer: ScenarioPeer,
  name: string,
  args: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) =>
  peer.client.request(
    { method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 }, ...extra } },
    CreateTaskResultSchema,
  );

/** spec: Capabilities */
export function advertisesTasks({ client }: ScenarioPeer): void {
  const tasks = client.getServerCapabilities()?.tasks;
  expect(tasks?.requests?.tools?.call).toEqual({});
  expect(tasks?.cancel).toEqual({});
}

/** spec: Tool-Level Negotiation */
export async function marksTools({ client }: ScenarioPeer): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.find((tool) => tool.name === 'echo')?.execution?.taskSupport).toBe('optional');
}

/** spec: Creating Tasks, Result Retrieval */
export async function answersWithTaskThenResult(peer: ScenarioPeer): Promise<void> {
  const { task } = await createTask(peer, 'sleep', { ms: 300 });
  expect(task.status).toBe('working');
  expect(typeof task.taskId).toBe('string');
  expect(new Date(task.createdAt).toISOString()).toBe(task.createdAt);
  expect(new Date(task.lastUpdatedAt).toISOString()).toBe(task.lastUpdatedAt);
  expect(task.ttl).toBe(60_000);
  expect(task.pollInterval).toBeGreaterThan(0);

  const tasks = peer.client.experimental.tasks;
  const polled = await tasks.getTask(task.taskId);
  expect(polled.taskId).toBe(task.taskId);
  expect(['working', 'completed']).toContain(polled.status);
  expect(polled._meta?.[RELATED]).toBeUndefined();

  const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
  expect(result.content).toEqual([{ type: 'text', text: 'slept 300 ms' }]);
  expect(result._meta?.[RELATED]).toEqual({ taskId: task.taskId });
  expect((await tasks.getTask(task.taskId)).status).toBe('completed');
}

/** spec: Task Execution Errors. `augment`: taskgate's own tasks, which carry the statusMessage. */
export async function failsOnIsError(peer: ScenarioPeer, augment: boolean): Promise<void> {
  const { task } = await createTask(peer, 'fail', { message: 'disk full' });
  const tasks = peer.client.experimental.tasks;
  const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
  expect(result.isError).toBe(true);
  expect(result.content).toEqual([{ type: 'text', text: 'disk full' }]);
  const failed = await tasks.getTask(task.taskId);
  expect(failed.status).toBe('failed');
  // The spec says a failed task SHOULD carry a statusMessage; the SDK's native tasks leave it out.
  if (augment) expect(failed.statusMessage).toContain('disk full');
}

/** spec: Task Execution Errors */
export async function failsOnRpcError(peer: ScenarioPeer): Promise<void> {
  const { task } = await createTask(peer, 'throw', {
    code: -32099,
    message: 'quota exceeded',
    data: { retry: 5 },
  });
  const tasks = peer.client.experimental.tasks;
  const error = await tasks
    .getTaskResult(task.taskId, CallToolResultSchema)
    .catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(McpError);
  expect((error as McpError).code).toBe(-32099);
  expect((error as McpError).message).toContain('quota exceeded');
  expect((error as McpError).data).toEqual({ retry: 5 });
  expect((await tasks.getTask(task.taskId)).status).toBe('failed');
}

/**
 * spec: Task Cancellation: cancelled before the answer, stays cancelled, stops the call, refuses a second
 * cancel. `label` names the call among those the fixture saw cancelled (its list lives as long as it does).
 */
export async function cancels(peer: ScenarioPeer, label: string): Promise<void> {
  const { client } = peer;
  const { task } = await createTask(peer, 'sleep', { ms: 30_000, label });
  // A plain call answered after it shows the upstream is up and was handed the sleep first, so the
  // cancellation has a running call to stop (over HTTP a cancel that overtakes its call stops nothing).
  await client.callTool({ name: 'echo', arguments: { text: 'barrier' } });
  const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
  expect(cancelled.status).toBe('cancelled');
  expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('cancelled');

  // The upstream learns of it by notifications/cancelled; over HTTP that is a separate POST, which may
  // reach the server after the next request: ask until it has (bounded).
  const cancelledUpstream = async (): Promise<string[]> => {
    const seen = await client.callTool({ name: 'cancelled-calls', arguments: {} });
    return JSON.parse((seen.content as { text: string }[])[0]!.text) as string[];
  };
  const deadline = Date.now() + 10_000;
  let stopped = await cancelledUpstream();
  while (!stopped.includes(label) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    stopped = await cancelledUpstream();
  }
  expect(stopped).toContain(label);

  const again = await client.experimental.tasks.cancelTask(task.taskId).catch((caught: unknown) => caught);
  expect(again).toBeInstanceOf(McpError);
  expect((again as McpError).code).toBe(-32602);
}

/** spec: Protocol Errors */
export async function refusesUnknownTask({ client }: ScenarioPeer): Promise<void> {
  for (const call of [
    () => client.experimental.tasks.getTask('no-such-task'),
    () => client.experimental.tasks.getTaskResult('no-such-task', CallToolResultSchema),
    () => client.experimental.tasks.cancelTask('no-such-task'),
  ]) {
    const error = await call().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
  }
}

/** spec: Task Progress Notifications: for the whole life of the task, tagged with the task. */
export async function deliversProgress(peer: ScenarioPeer): Promise<void> {
  const { task } = await createTask(
    peer,
    'progress',
    { steps: 3, intervalMs: 20 },
    { _meta: { progressToken: 'tok-1' } },
  );
  await peer.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
  const progress = await peer.transport.received.waitFor(
    (message) =>
      'method' in message && message.method === 'notifications/progress' && message.params?.progress === 3,
    'the last progress notification',
  );
  const all = peer.transport.received.items.filter(
    (message) => 'method' in message && message.method === 'notifications/progress',
  );
  expect(all.map((message) => ('params' in message ? message.params?.progress : undefined))).toEqual([
    1, 2, 3,
  ]);
  expect('params' in progress && progress.params?.progressToken).toBe('tok-1');
  expect('params' in progress && progress.params?._meta?.[RELATED]).toEqual({ taskId: task.taskId });
}

/** spec: Input Required Status: an elicitation made during the task, tagged with it, resumes it. */
export async function forwardsElicitation(peer: ScenarioPeer): Promise<void> {
  const asked: ElicitRequest[] = [];
  peer.client.setRequestHandler(ElicitRequestSchema, (request) => {
    asked.push(request);
    return { action: 'accept', content: { answer: '42' } };
  });
  const { task } = await createTask(peer, 'elicit', { message: 'the answer?' });
  const tasks = peer.client.experimental.tasks;
  const result = await tasks.getTaskResult(task.taskId, CallToolResultSchema);
  expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual({
    action: 'accept',
    content: { answer: '42' },
  });
  expect(asked).toHaveLength(1);
  expect(asked[0]!.params._meta?.[RELATED]).toEqual({ taskId: task.taskId });
  expect((await tasks.getTask(task.taskId)).status).toBe('completed');
}

export async function passesPlainThrough({ client }: ScenarioPeer): Promise<void> {
  const echo = await client.callTool({ name: 'echo', arguments: { text: 'héllo ✓' } });
  expect(echo.content).toEqual([{ type: 'text', text: 'héllo ✓' }]);
  const resource = await client.readResource({ uri: 'fixture://hello' });
  expect(resource.contents[0]).toMatchObject({ text: 'hello from fixture' });
  const prompt = await client.getPrompt({ name: 'greet', arguments: { name: 'Ada' } });
  expect(prompt.messages[0]?.content).toMatchObject({ text: 'Hello, Ada!' });
}
