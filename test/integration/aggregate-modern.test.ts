/**
 * 2026-07-28 clients through the built taskgate in front of several servers (issue 32): an SDK 1.x server
 * without tasks, one with v1 tasks of its own, an SDK v2 server and a v2 tasks-extension server, each a
 * process of its own under `upstreams`. Over stdio a pinned SDK v2 client (server/discover, the merged
 * lists, a call on each server, an elicitation as MRTR from a 2025 server and from the SDK v2 one); over
 * the HTTP front 2026-07-28 requests with the tasks extension declared, a task on each server read by
 * tasks/get under its prefixed id until it completes.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { connectModern } from '../helpers/modern-client.js';
import { modernRequest, type ModernAnswer } from '../helpers/modern-raw.js';
import { FIXTURES, Gateway, TASKGATE } from '../helpers/taskgate.js';
import { textOf } from '../helpers/tool-results.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const node = (fixture: string) => ({ command: process.execPath, args: [fixture] });

function configFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'taskgate-agg-modern-')), 'config.json');
  const upstreams = {
    legacy: node(FIXTURES.legacy),
    v1tasks: node(FIXTURES.native),
    sdk2: node(FIXTURES.modern),
    v2tasks: node(FIXTURES.v2Tasks),
  };
  writeFileSync(file, JSON.stringify({ upstreams }));
  return file;
}

function resultOf(answer: ModernAnswer): Record<string, unknown> {
  if (answer.result === undefined) throw new Error(`an error: ${JSON.stringify(answer.error)}`);
  return answer.result;
}

describe('2026-07-28 clients in front of several servers, through the built taskgate (issue 32)', () => {
  it('stdio: a pinned SDK v2 client discovers taskgate, lists every server’s tools, calls each, answers elicitations', async () => {
    const asked: string[] = [];
    const connection = await connectModern(
      { command: [process.execPath, TASKGATE, '--config', configFile()] },
      {
        probe: 'in-place',
        onElicit: (params) => {
          asked.push(params.message);
          return { action: 'accept', content: { answer: 'forty-two' } };
        },
      },
    );
    cleanups.push(() => connection.close());
    const { client } = connection;
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getServerVersion()).toMatchObject({ name: 'taskgate' });
    expect(client.getServerCapabilities()).toMatchObject({
      tools: {},
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    });
    const names = (await client.listTools()).tools.map((tool) => tool.name);
    for (const server of ['legacy', 'v1tasks', 'sdk2', 'v2tasks']) {
      expect(names).toContain(`${server}__echo`);
      const result = await client.callTool({ name: `${server}__echo`, arguments: { text: server } });
      expect(textOf(result)).toBe(server);
    }
    const fromLegacy = await client.callTool({ name: 'legacy__elicit', arguments: { message: 'legacy?' } });
    expect(textOf(fromLegacy)).toContain('forty-two');
    const fromSdk2 = await client.callTool({ name: 'sdk2__elicit', arguments: { message: 'sdk2?' } });
    expect(JSON.parse(textOf(fromSdk2))).toMatchObject({
      action: 'accept',
      content: { answer: 'forty-two' },
    });
    expect(asked).toEqual(['legacy?', 'sdk2?']);
  });

  it('HTTP front: a task on each server for a request with the tasks extension, read by tasks/get until it completes', async () => {
    const gateway = await Gateway.start([], ['--config', configFile()]);
    cleanups.push(() => gateway.stop());
    const calls = {
      legacy: ['legacy__sleep', { ms: 10 }, 'slept 10 ms'],
      v1tasks: ['v1tasks__sleep', { ms: 10 }, 'slept 10 ms'],
      sdk2: ['sdk2__sleep', { ms: 10 }, 'slept 10 ms'],
      v2tasks: ['v2tasks__slow', { ms: 10, text: 'v2' }, 'v2'],
    } as const;
    for (const [server, [name, args, text]] of Object.entries(calls)) {
      const created = resultOf(await modernRequest(gateway.url, 'tools/call', { name, arguments: args }));
      expect(created.resultType, server).toBe('task');
      const taskId = String(created.taskId);
      expect(taskId.startsWith(`${server}__`)).toBe(true);
      const deadline = Date.now() + 15_000;
      let got = resultOf(await modernRequest(gateway.url, 'tasks/get', { taskId }));
      while (got.status === 'working' && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, Number(got.pollIntervalMs ?? 100)));
        got = resultOf(await modernRequest(gateway.url, 'tasks/get', { taskId }));
      }
      expect(got, server).toMatchObject({ status: 'completed', result: { content: [{ text }] } });
    }
  });
});
