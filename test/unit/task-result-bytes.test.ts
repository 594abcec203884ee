/**
 * Issue 33: the result of a task taskgate holds (a plain server's answer to a task-augmented call) is kept
 * as the bytes the server wrote, and tasks/result gives them back as they are, with only the response's id
 * and the related-task `_meta` written around them. taskgate's Session between two LineChannels over
 * in-memory pipes; the server writes its own lines, the client reads raw lines.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Pieces } from '../../src/protocol/pieces.js';
import { keptResultBytes } from '../../src/tasks/result-bytes.js';
import { byteLines } from '../helpers/byte-lines.js';
import { Inbox } from '../helpers/inbox.js';
import { pipedSession } from '../helpers/piped-session.js';
import { INITIALIZE } from '../helpers/taskgate.js';

type Json = Record<string, unknown>;

const LIMIT = 16 * 1024 * 1024;
const RELATED = 'io.modelcontextprotocol/related-task';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function gateway() {
  const { fromClient, toClient, fromServer, toServer, close } = pipedSession({
    limit: LIMIT,
    maxResultBytes: LIMIT,
  });
  cleanups.push(close);
  const client = new Inbox<Buffer>();
  byteLines(toClient, (line) => client.push(line));
  const calls = new Inbox<Json>();
  const serverWrites = (line: string): void => void fromServer.write(`${line}\n`);
  byteLines(toServer, (line) => {
    const message = JSON.parse(line.toString()) as Json;
    if (message.method === 'initialize') {
      serverWrites(
        JSON.stringify({
          jsonrpc: '2.0',
          id: message.id,
          result: {
            protocolVersion: '2025-11-25',
            capabilities: { tools: {} },
            serverInfo: { name: 's', version: '1' },
          },
        }),
      );
    } else if (message.method === 'tools/call') calls.push(message);
  });
  const clientSends = (message: Json): void => void fromClient.write(`${JSON.stringify(message)}\n`);
  clientSends(INITIALIZE);
  await client.waitFor((line) => line.includes('"protocolVersion"'), 'the initialize answer');
  clientSends({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { client, calls, clientSends, serverWrites };
}

/**
 * A task's result as the server wrote it, and what tasks/result answered: a task-augmented call of a
 * server that knows no tasks (taskgate holds the task), answered with `result`, then fetched.
 */
async function heldAndFetched(result: string): Promise<{ taskId: string; answer: Buffer }> {
  const gate = await gateway();
  gate.clientSends({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'big', arguments: {}, task: {} },
  });
  const created = JSON.parse(
    (await gate.client.waitFor((line) => line.includes('"id":1'), 'the CreateTaskResult')).toString(),
  ) as { result: { task: { taskId: string } } };
  const { taskId } = created.result.task;
  const call = await gate.calls.waitFor(() => true, 'the call upstream');
  gate.serverWrites(`{"jsonrpc":"2.0", "id":${JSON.stringify(call.id)}, "result":${result}}`);
  gate.clientSends({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
  const answer = await gate.client.waitFor((line) => line.includes('"id":2'), 'the tasks/result answer');
  return { taskId, answer };
}

/** A result as a server may write it, with what a re-serialization would change: escapes, spaces, digits. */
const written = (bytes: number): string => {
  const text = String.raw`caf\u00e9 \/ \"quoted\" \\ line\n`;
  return `{ "content" : [{"type":"text","text":"${text.repeat(Math.ceil(bytes / text.length))}"}], "n": 1.50 }`;
};

describe('issue 33: a task result taskgate holds is served as the bytes the server wrote', () => {
  it('a 4 MB result: its bytes, with only the id and the related-task _meta around them', async () => {
    const result = written(4_000_000);
    const { taskId, answer } = await heldAndFetched(result);
    const tag = `{"_meta":{"${RELATED}":{"taskId":"${taskId}"}},`;
    expect(answer.toString()).toBe(`{"jsonrpc":"2.0","id":2,"result":${tag}${result.slice(1)}}`);
  });

  it("the server's answer is scanned, never parsed: JSON.parse sees none of its megabytes", async () => {
    const parse = vi.spyOn(JSON, 'parse');
    try {
      await heldAndFetched(written(4_000_000));
      const big = parse.mock.calls.filter(([text]) => typeof text === 'string' && text.length > 1_000_000);
      expect(big).toHaveLength(0);
    } finally {
      parse.mockRestore();
    }
  });

  it('an empty result: the tag alone, as valid JSON', async () => {
    const { taskId, answer } = await heldAndFetched('{ }');
    expect(JSON.parse(answer.toString())).toEqual({
      jsonrpc: '2.0',
      id: 2,
      result: { _meta: { [RELATED]: { taskId } } },
    });
  });

  it('a result with a _meta of its own: the tag joins it, the rest as before', async () => {
    const { taskId, answer } = await heldAndFetched(
      '{"content":[{"type":"text","text":"x"}],"_meta":{"k":1}}',
    );
    expect(JSON.parse(answer.toString())).toEqual({
      jsonrpc: '2.0',
      id: 2,
      result: { content: [{ type: 'text', text: 'x' }], _meta: { k: 1, [RELATED]: { taskId } } },
    });
  });
});

describe('issue 33: what a task keeps of the reads its result came in', () => {
  const line = (text: string): Buffer =>
    Buffer.from(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${text}"}]}}`);
  const resultOf = (whole: Buffer): Buffer => whole.subarray(whole.indexOf('{"content"'), whole.length - 1);
  const joined = (kept: Buffer | Pieces | undefined): Buffer =>
    kept instanceof Pieces ? kept.join() : (kept as Buffer);
  /** `whole` as reads of `size` bytes, each in memory of its own. */
  const readsOf = (whole: Buffer, size: number): Pieces => {
    const parts: Buffer[] = [];
    for (let at = 0; at < whole.length; at += size) parts.push(Buffer.from(whole.subarray(at, at + size)));
    return new Pieces(parts, whole.length);
  };

  it('a big result: views of the reads themselves, none copied', () => {
    const whole = line('x'.repeat(1_000_000));
    const reads = readsOf(whole, 64 * 1024);
    const kept = keptResultBytes(reads);
    expect(joined(kept).equals(resultOf(whole))).toBe(true);
    const memory = new Set(reads.parts.map((part) => part.buffer));
    expect((kept as Pieces).parts.filter((part) => !memory.has(part.buffer))).toEqual([]);
  });

  it('a small result of a big read: copied out, so that the task does not hold the read', () => {
    const whole = line('small');
    const read = Buffer.alloc(256 * 1024, 0x20);
    whole.copy(read);
    const cut = 20;
    const kept = keptResultBytes(
      new Pieces([read.subarray(0, cut), read.subarray(cut, whole.length)], whole.length),
    );
    expect(joined(kept).equals(resultOf(whole))).toBe(true);
    expect((kept as Pieces).parts.filter((part) => part.buffer === read.buffer)).toEqual([]);
  });
});
