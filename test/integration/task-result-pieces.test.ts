/**
 * Issue 33: a big result of a task taskgate holds travels as the reads it came in, from the server's answer
 * into the store and from the store to the client's tasks/result answer, with the envelope and the
 * related-task `_meta` written around it: byte for byte the result the plain call gets, never joined into
 * one copy nor parsed by taskgate, in the memory store and in Redis (fetched while the task runs, and after
 * it ended, read back from the store). taskgate's Session between two LineChannels over in-memory pipes;
 * the server writes its lines in pipe-sized chunks, the client reads raw chunks.
 */
import type { PassThrough } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { RedisTaskStore } from '../../src/tasks/redis-store.js';
import type { TaskStore } from '../../src/tasks/store.js';
import { watchBytes } from '../helpers/byte-watch.js';
import { Inbox } from '../helpers/inbox.js';
import { pipedSession } from '../helpers/piped-session.js';
import { freshPrefix, redisForTests } from '../helpers/redis.js';
import { INITIALIZE } from '../helpers/taskgate.js';

const redis = await redisForTests();
afterAll(() => redis?.stop());

const LIMIT = 16 * 1024 * 1024;
const PIPE_CHUNK = 64 * 1024;
const RELATED = 'io.modelcontextprotocol/related-task';
/** Over it, a join or a parse is one of the big result's. */
const BIG = 1_000_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const STORES: { name: string; make: () => Promise<TaskStore> }[] = [
  { name: 'memory', make: async () => new MemoryTaskStore({ maxTasks: 10, maxResultBytes: LIMIT }) },
  {
    name: 'Redis',
    make: async () => {
      const store = new RedisTaskStore({
        url: redis!.url,
        keyPrefix: freshPrefix(),
        cursorSecret: 'task-result-pieces-test-cursor-secret',
        maxTasks: 10,
        maxResultBytes: LIMIT,
      });
      await store.ready();
      return store;
    },
  },
];

/** A line written as a pipe delivers it: in chunks of at most 64 KiB, the newline with the last. */
function writeInChunks(stream: PassThrough, line: Buffer): Buffer {
  const whole = Buffer.concat([line, Buffer.from('\n')]);
  for (let at = 0; at < whole.length; at += PIPE_CHUNK) stream.write(whole.subarray(at, at + PIPE_CHUNK));
  return whole;
}

/**
 * A result as a server may write it, with what decoding or re-serialising would change: escapes
 * (`\u00e9`, `\/`, `\"`, `\\`, `\n`), characters of two, three and four bytes written as they are, spaces
 * and digits. Its unit is 61 bytes, so that 64 KiB reads cut it everywhere, inside characters too.
 */
function written(bytes: number): Buffer {
  const unit = String.raw`caf\u00e9 \/ \"q\" \\ n\n é ☕ 😀 ` + 'x'.repeat(15);
  const text = unit.repeat(Math.ceil(bytes / Buffer.byteLength(unit)));
  return Buffer.from(`{ "content" : [{"type":"text","text":"${text}"}], "n": 1.50 }`);
}

/** One client line: the chunks it came in (never joined while watched) and the text of its first chunk. */
interface Line {
  head: string;
  chunks: Buffer[];
}

async function gateway(store: TaskStore) {
  const { fromClient, toClient, fromServer, toServer, close } = pipedSession({
    limit: LIMIT,
    maxResultBytes: LIMIT,
    store,
  });
  cleanups.push(async () => {
    await close();
    await store.close();
  });
  const lines = new Inbox<Line>();
  let chunks: Buffer[] = [];
  toClient.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      chunks.push(chunk.subarray(start, nl));
      lines.push({ head: chunks[0]!.toString('utf8', 0, 300), chunks });
      chunks = [];
      start = nl + 1;
    }
    if (start < chunk.length) chunks.push(chunk.subarray(start));
  });
  const calls = new Inbox<{ id: unknown }>();
  let pending = '';
  toServer.on('data', (chunk: Buffer) => {
    pending += chunk.toString();
    for (let nl = pending.indexOf('\n'); nl !== -1; nl = pending.indexOf('\n')) {
      const message = JSON.parse(pending.slice(0, nl)) as { id?: unknown; method?: string };
      pending = pending.slice(nl + 1);
      if (message.method === 'initialize') {
        const result = {
          protocolVersion: '2025-11-25',
          capabilities: { tools: {} },
          serverInfo: { name: 's', version: '1' },
        };
        fromServer.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, result })}\n`);
      } else if (message.method === 'tools/call') calls.push({ id: message.id });
    }
  });
  const clientSends = (message: object): void => void fromClient.write(`${JSON.stringify(message)}\n`);
  clientSends(INITIALIZE);
  await lines.waitFor((line) => line.head.includes('"protocolVersion"'), 'the initialize answer');
  clientSends({ jsonrpc: '2.0', method: 'notifications/initialized' });
  /** The server answers its call `id` with `result`, in pipe-sized chunks; the buffer they are views of. */
  const serverAnswers = (id: unknown, result: Buffer): Buffer =>
    writeInChunks(
      fromServer,
      Buffer.concat([
        Buffer.from(`{"jsonrpc":"2.0", "id":${JSON.stringify(id)}, "result":`),
        result,
        Buffer.from('}'),
      ]),
    );
  const answerTo = (id: number, what: string): Promise<Line> =>
    lines.waitFor((line) => new RegExp(`^\\{"jsonrpc":"2.0", ?"id":${id},`).test(line.head), what);
  return { lines, calls, clientSends, serverAnswers, answerTo };
}

const call = (id: number, task: boolean): object => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'big', arguments: {}, ...(task && { task: {} }) },
});

describe.each(STORES)('issue 33: a big task result in pieces, $name store', ({ name, make }) => {
  for (const when of ['while the task runs', 'after the task ended'] as const) {
    it(`tasks/result ${when}: the plain call's result bytes, with only the envelope and the tag around them, never joined or parsed`, async (context) => {
      if (name === 'Redis' && redis === undefined) context.skip();
      const gate = await gateway(await make());
      const result = written(3_000_000);
      // Some read ends inside a character of several bytes.
      const cutInside = Array.from({ length: 40 }, (_, i) => result[(i + 1) * PIPE_CHUNK - 40]! >> 6 === 2);
      expect(cutInside).toContain(true);

      const { value, ...watch } = await watchBytes(BIG, async () => {
        gate.clientSends(call(1, false));
        const plainCall = await gate.calls.waitFor(() => true, 'the plain call upstream');
        gate.serverAnswers(plainCall.id, result);
        const plain = await gate.answerTo(1, 'the plain answer');

        gate.clientSends(call(2, true));
        const created = await gate.answerTo(2, 'the CreateTaskResult');
        const taskId = /"taskId":"([^"]+)"/.exec(created.head)![1]!;
        const taskCall = await gate.calls.waitFor((c) => c !== plainCall, 'the task call upstream');
        const fetch = (): void =>
          gate.clientSends({ jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId } });
        if (when === 'while the task runs') fetch();
        const whole = gate.serverAnswers(taskCall.id, result);
        if (when === 'after the task ended') {
          await gate.lines.waitFor(
            (line) => line.head.includes('notifications/tasks/status') && line.head.includes('"completed"'),
            'the task completed',
          );
          fetch();
        }
        const answer = await gate.answerTo(3, 'the tasks/result answer');
        return { plain, answer, taskId, whole };
      });
      expect(watch.joins).toEqual([]);
      expect(watch.parsedBySource).toBe(0);

      const { plain, answer, taskId, whole } = value;
      const plainLine = Buffer.concat(plain.chunks);
      expect(
        plainLine.equals(
          Buffer.concat([Buffer.from('{"jsonrpc":"2.0", "id":1, "result":'), result, Buffer.from('}')]),
        ),
      ).toBe(true);
      const tag = `{"_meta":{"${RELATED}":{"taskId":"${taskId}"}},`;
      const expected = Buffer.concat([
        Buffer.from(`{"jsonrpc":"2.0","id":3,"result":${tag}`),
        result.subarray(1),
        Buffer.from('}'),
      ]);
      expect(Buffer.concat(answer.chunks).equals(expected)).toBe(true);
      // Held in this process, the result goes out as views of the very reads it came in.
      if (name === 'memory' || when === 'while the task runs') {
        const big = answer.chunks.filter((chunk) => chunk.length > 1000);
        expect(big.length).toBeGreaterThan(40);
        expect(big.filter((chunk) => chunk.buffer !== whole.buffer)).toEqual([]);
      }
    });
  }
});
