/**
 * taskgate on raw pipes: what an SDK client never sends, and the process lifecycle. Every request must
 * get exactly one clear answer, and taskgate must keep serving afterwards.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FIXTURES, RawPeer } from '../helpers/taskgate.js';

let peer: RawPeer | undefined;
afterEach(async () => {
  await peer?.stop();
  peer = undefined;
});

const echo = (id: number | string) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: `still serving ${id}` } },
});

async function expectStillServing(p: RawPeer, id: number | string): Promise<void> {
  p.send(echo(id));
  expect(await p.response(id)).toMatchObject({ result: { content: [{ text: `still serving ${id}` }] } });
}

describe('bad input from the client', () => {
  describe('what an SDK client never sends, and messages of megabytes, one after another on one taskgate', () => {
    // Each answer, then an echo answered after it, shows that taskgate carried on: one process serves them all.
    // Their ids differ, so that no test can take another's answer for its own.
    let shared: RawPeer;
    beforeAll(async () => {
      shared = await RawPeer.initialized();
    });
    afterAll(() => shared?.stop());

    it('answers a line that is not JSON with -32700 and carries on', async () => {
      const p = shared;
      p.write('{"jsonrpc": "2.0", "id": 1, "method": ');
      expect(await p.response(null)).toMatchObject({ error: { code: -32700 } });
      await expectStillServing(p, 2);
    });

    it.each([
      ['no method', { jsonrpc: '2.0', id: 10 }, -32600],
      ['a wrong jsonrpc version', { jsonrpc: '1.0', id: 11, method: 'tools/list' }, -32600],
      ['no jsonrpc at all', { id: 12, method: 'tools/list' }, -32600],
      ['a method that is not a string', { jsonrpc: '2.0', id: 13, method: 42 }, -32600],
      ['params that are a string', { jsonrpc: '2.0', id: 14, method: 'tools/list', params: 'all' }, -32600],
      [
        'params that are an array',
        { jsonrpc: '2.0', id: 15, method: 'tools/call', params: ['echo'] },
        -32602,
      ],
      ['tasks/get without a taskId', { jsonrpc: '2.0', id: 16, method: 'tasks/get', params: {} }, -32602],
      [
        'tasks/get with a numeric taskId',
        { jsonrpc: '2.0', id: 17, method: 'tasks/get', params: { taskId: 7 } },
        -32602,
      ],
      [
        'tasks/result of an unknown task',
        { jsonrpc: '2.0', id: 18, method: 'tasks/result', params: { taskId: 'nope' } },
        -32602,
      ],
      [
        'tasks/cancel of an unknown task',
        { jsonrpc: '2.0', id: 19, method: 'tasks/cancel', params: { taskId: 'nope' } },
        -32602,
      ],
    ])(
      'answers a request with %s with its error code, naming the problem, and carries on',
      async (what, message, code) => {
        shared.send(message);
        const response = await shared.response(message.id);
        expect(response).toMatchObject({ jsonrpc: '2.0', error: { code } });
        expect(String((response.error as { message: string }).message).length).toBeGreaterThan(10);
        await expectStillServing(shared, `after ${what}`);
      },
    );

    it('refuses a 50 MB message with an error addressed to its id, without crashing (docs/sdk-notes.md: 10 MB kills SDK servers)', async () => {
      const p = shared;
      const huge = JSON.stringify({
        jsonrpc: '2.0',
        id: 'huge',
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'x'.repeat(50 * 1024 * 1024) } },
      });
      p.write(huge);
      const response = await p.response('huge', 30_000);
      expect(response).toMatchObject({ error: { code: -32600 } });
      expect(String((response.error as { message: string }).message)).toMatch(/exceeds the limit/);
      await expectStillServing(p, 'after-huge');
    });

    it('passes a 5 MB result through intact', async () => {
      const p = shared;
      p.send({
        jsonrpc: '2.0',
        id: 'big',
        method: 'tools/call',
        params: { name: 'large', arguments: { bytes: 5_000_000 } },
      });
      const response = await p.response('big');
      const text = (response.result as { content: { text: string }[] }).content[0]!.text;
      expect(text.length).toBe(5_000_000);
    });

    it('keeps ids apart: a reused id and a string id equal to a number are each answered once, correctly', async () => {
      const p = shared;
      p.send({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'sleep', arguments: { ms: 200 } },
      });
      p.send({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'second 7' } },
      });
      p.send({
        jsonrpc: '2.0',
        id: '7',
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'string 7' } },
      });
      await p.messages.waitFor(
        (m) => m.id === 7 && JSON.stringify(m.result).includes('slept'),
        'the answer to the first request 7',
      );
      const answers = p.messages.items
        .filter((m) => m.id === 7 || m.id === '7')
        .map((m) => JSON.stringify(m.result));
      expect(answers).toHaveLength(3);
      expect(answers.filter((a) => a.includes('second 7'))).toHaveLength(1);
      expect(answers.filter((a) => a.includes('string 7'))).toHaveLength(1);
      expect(p.messages.items.find((m) => m.id === '7')?.result).toMatchObject({
        content: [{ text: 'string 7' }],
      });
    });
  });
});

describe('lifecycle', () => {
  it('exits non-zero naming the command when the upstream cannot be started', async () => {
    const p = (peer = RawPeer.start(['--', '/nonexistent/mcp-server', '--flag']));
    const [code] = await p.exited;
    expect(code).toBe(1);
    expect(p.stderr).toContain('/nonexistent/mcp-server');
  });

  it('exits non-zero naming the command and its exit status when the upstream dies before initialize', async () => {
    const p = (peer = RawPeer.start(['--', process.execPath, FIXTURES.legacy], {
      FIXTURE_EXIT_ON_START: '3',
    }));
    p.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    });
    const [code] = await p.exited;
    expect(code).toBe(1);
    expect(p.stderr).toContain(FIXTURES.legacy);
    expect(p.stderr).toMatch(/exited with code 3/);
    // Whether or not initialize got there first, it is never left without an answer that says why.
    for (const message of p.messages.items)
      expect(message).toMatchObject({ id: 'init', error: { code: -32000 } });
  });

  it('fails running tasks and pending calls with the exit status when the upstream crashes, and keeps serving tasks', async () => {
    // Left down, so that a later call meets it gone (supervision.test.ts covers the restart).
    const p = (peer = await RawPeer.initialized('legacy', ['--no-upstream-restart']));
    p.send({
      jsonrpc: '2.0',
      id: 't',
      method: 'tools/call',
      params: { name: 'sleep', arguments: { ms: 30_000 }, task: {} },
    });
    const taskId = ((await p.response('t')).result as { task: { taskId: string } }).task.taskId;
    p.send({ jsonrpc: '2.0', id: 'result', method: 'tasks/result', params: { taskId } });
    p.send({
      jsonrpc: '2.0',
      id: 'crash',
      method: 'tools/call',
      params: { name: 'crash', arguments: { code: 7 } },
    });

    expect(await p.response('crash')).toMatchObject({ error: { code: -32000 } });
    const result = await p.response('result');
    expect(result).toMatchObject({ error: { code: -32000 } });
    expect(String((result.error as { message: string }).message)).toMatch(/exited with code 7/);
    p.send({ jsonrpc: '2.0', id: 'get', method: 'tasks/get', params: { taskId } });
    const task = (await p.response('get')).result as { status: string; statusMessage: string };
    expect(task.status).toBe('failed');
    expect(task.statusMessage).toMatch(/exited with code 7/);
    p.send(echo('later'));
    expect(await p.response('later')).toMatchObject({ error: { code: -32000 } });
  });

  it('ends the upstream server when the client goes away, and exits 0', async () => {
    const p = (peer = await RawPeer.initialized('legacy', ['--log-level', 'info']));
    const started = /"pid":(\d+),"command"/.exec(p.stderr);
    expect(started).not.toBeNull();
    const upstreamPid = Number(started![1]);
    p.child.stdin.end();
    const [code] = await p.exited;
    expect(code).toBe(0);
    expect(() => process.kill(upstreamPid, 0)).toThrow(/ESRCH/);
  });
});
