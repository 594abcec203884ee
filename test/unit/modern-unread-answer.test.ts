/**
 * Issue 28: a plain 2026-07-28 tools/call's small upstream answer reaches the bridge unread. The Session
 * hands the call (its request's context) the upstream's bytes with what smallAnswer learned of them, and
 * the call's answer is made of those bytes (result-bytes.ts), as a 2025 client's is forwarded as its
 * bytes; a call that is parked, a task, or a result with `_meta`, `resultType` or `task` is read and goes
 * the way it went before. First the two paths against each other on many answers, then the bridge with a
 * real Session and SDK 1.x server behind it, in this process.
 */
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import { bridgeSession } from '../../src/modern/shared-bridge.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { LineChannel } from '../../src/transport/line-channel.js';
import { byteLines } from '../helpers/byte-lines.js';
import { answerTo, BytesAnswer, unreadAnswerTo, type ResultForm } from '../../src/modern/bridge-call.js';
import { aliasOf, digitsOf, serialize } from '../../src/protocol/exact-ids.js';
import type { JsonObject, Request, RequestId } from '../../src/protocol/messages.js';
import type { ModernAnswer } from '../../src/protocol/modern/exchange.js';
import { LOG_LEVEL_META } from '../../src/protocol/modern/meta.js';
import { addedMembers } from '../../src/protocol/modern/result-bytes.js';
import { smallAnswer, type SmallAnswer } from '../../src/protocol/small-answer.js';
import { ClientGiveUp } from '../../src/protocol/modern/exchange.js';
import { MODERN_META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { sendProgress, textResult, type FakeTool } from '../helpers/in-process.js';

const serverInfo = { name: 'server é 😀', version: '1' };
const form: ResultForm = { resultOptions: { serverInfo }, resultMembers: addedMembers(serverInfo) };
const BIG_ID = '9007199254740993';

/** The answer the parse path makes of the same bytes: read, then answerTo as the bridge calls it. */
function parsedPath(request: Request, raw: Buffer): ModernAnswer {
  const result = (JSON.parse(raw.toString('utf8')) as { result: JsonObject }).result;
  return answerTo(request, { result }, raw, form);
}

/** The answer as a client reads it: the body when there is one, else the response serialized. */
const asRead = (answer: ModernAnswer): unknown =>
  JSON.parse(answer!.body === undefined ? serialize(answer!.response) : answer!.body.toString('utf8'));

describe('issue 28: an answer made of the unread bytes, against the one made of the parsed response', () => {
  const clientId: fc.Arbitrary<RequestId> = fc.oneof(
    fc.integer(),
    fc.string({ unit: 'binary' }),
    fc.constantFrom('"quoted" \\ é 😀 \u2028', aliasOf(BIG_ID)!, aliasOf(`-${BIG_ID}7`)!),
  );
  const wireId = fc.oneof(fc.nat().map(String), fc.constantFrom(BIG_ID, '"s\\u00e9"', '"\\ud800"', '1e2'));
  const member = (name: string, value: fc.Arbitrary<unknown>) =>
    fc.option(
      value.map((v) => ({ [name]: v })),
      { nil: {} },
    );
  const result = fc
    .tuple(
      fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue(), { maxKeys: 4 }),
      member('content', fc.constant([{ type: 'text', text: 'caf\u00e9 "q" \\ \n 😀 </script>' }])),
      member('isError', fc.boolean()),
      member('_meta', fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 2 })),
      member('resultType', fc.constantFrom('complete', 'input_required', 'task')),
      member('task', fc.constant({ taskId: 't', status: 'working' })),
    )
    .map((parts) => Object.assign({}, ...parts) as JsonObject);
  /** A success response as an upstream may write it: members in either order, spaced, its result pretty-printed. */
  const response = fc
    .tuple(wireId, result, fc.boolean(), fc.constantFrom('', ' ', '\t', ' \n', '\r\n'), fc.boolean())
    .map(([id, value, idLast, space, pretty]) => {
      const body = JSON.stringify(value, null, pretty ? 2 : undefined);
      const members = [`"jsonrpc":${space}"2.0"`, `"result":${space}${body}`];
      members.splice(idLast ? 2 : 0, 0, `"id":${space}${id}`);
      return { text: `{${space}${members.join(`,${space}`)}}`, value };
    });

  it('gives the same JSON value, or falls back to the read exactly for _meta, resultType, task or a line break', () => {
    fc.assert(
      fc.property(clientId, response, (id, { text, value }) => {
        const raw = Buffer.from(text);
        const request: Request = { jsonrpc: '2.0', id, method: 'tools/call' };
        const answer = smallAnswer(raw) as SmallAnswer;
        expect(typeof answer, text).toBe('object');
        const made = unreadAnswerTo(request, raw, answer, form);
        const fallsBack = '_meta' in value || 'resultType' in value || 'task' in value || /[\r\n]/.test(text);
        if (fallsBack) {
          expect(made, text).toBeUndefined();
          return;
        }
        expect(made, text).toBeInstanceOf(BytesAnswer);
        const expected = parsedPath(request, raw);
        expect(asRead(made), text).toStrictEqual(asRead(expected));
        // The response beside the bytes, made of them only when read: the parse path's.
        expect(made!.response, text).toStrictEqual(expected!.response);
        // The client's id, exact: a large integer as its digits.
        const digits = digitsOf(id);
        if (digits !== undefined) expect(made!.body.toString(), text).toContain(`"id":${digits},`);
        else expect((JSON.parse(made!.body.toString()) as { id: unknown }).id, text).toStrictEqual(id);
      }),
      { numRuns: 3000 },
    );
  });

  it('an empty result, and one spaced inside, gain only what 2026-07-28 adds', () => {
    for (const text of ['{"jsonrpc":"2.0","id":1,"result":{}}', '{"jsonrpc":"2.0","id":1,"result":{ \t }}']) {
      const raw = Buffer.from(text);
      const made = unreadAnswerTo(
        { jsonrpc: '2.0', id: 'a', method: 'tools/call' },
        raw,
        smallAnswer(raw) as SmallAnswer,
        form,
      );
      expect(JSON.parse(made!.body.toString())).toStrictEqual({
        jsonrpc: '2.0',
        id: 'a',
        result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': serverInfo } },
      });
    }
  });

  it('only for tools/call: any other method is read', () => {
    const raw = Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}');
    const request: Request = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    expect(unreadAnswerTo(request, raw, smallAnswer(raw) as SmallAnswer, form)).toBeUndefined();
  });
});

const MARK = 'answer-mark-7f3c';
const plain: FakeTool = { name: 'plain', run: () => textResult(`${MARK} café 😀 "q"`) };
const failing: FakeTool = { name: 'failing', run: () => ({ ...textResult(MARK), isError: true }) };
const withMeta: FakeTool = { name: 'with-meta', run: () => ({ ...textResult(MARK), _meta: { mine: 1 } }) };
/** Progress and a log line about the call, then its result. */
const chatty: FakeTool = {
  name: 'chatty',
  run: async (_args, extra) => {
    await sendProgress(extra);
    await extra.sendNotification({
      method: 'notifications/message',
      params: { level: 'info', data: 'working' },
    });
    return textResult(MARK);
  },
};

let gate: InProcessBridge | undefined;
afterEach(async () => {
  expect(gate?.serverViolations() ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

/** `act`, counting the texts JSON.parse read that hold the upstream's result (marked MARK). */
async function parsesOfAnswer<T>(act: () => Promise<T>): Promise<{ value: T; parses: number }> {
  let parses = 0;
  const parse = JSON.parse;
  const spy = vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver) => {
    if (text.includes(MARK)) parses++;
    return parse(text, reviver) as unknown;
  });
  try {
    return { value: await act(), parses };
  } finally {
    spy.mockRestore();
  }
}

const callParams = (name: string, meta: object = MODERN_META) => ({ name, arguments: {}, _meta: meta });

/** Hands the bridge a tools/call with the client's own id. */
const callWithId = (bridge: InProcessBridge, id: RequestId, name: string) =>
  bridge.handle({
    request: { jsonrpc: '2.0', id, method: 'tools/call', params: callParams(name) },
    notify: () => undefined,
    signal: new ClientGiveUp(),
  });

describe('issue 28: the bridge, a real Session and SDK server behind it', () => {
  it('a plain call: its answer made of the bytes, never parsed; the response beside them the same', async () => {
    gate = await inProcessBridge([plain]);
    await gate.ask('tools/call', callParams('plain')); // the first call also lists the tools
    const { value: answer, parses } = await parsesOfAnswer(() =>
      gate!.ask('tools/call', callParams('plain')),
    );
    expect(parses).toBe(0);
    expect(answer).toBeInstanceOf(BytesAnswer);
    const body = JSON.parse(answer!.body!.toString()) as object;
    expect(body).toStrictEqual(answer!.response);
    expect(body).toMatchObject({
      result: {
        content: [{ type: 'text', text: `${MARK} café 😀 "q"` }],
        resultType: 'complete',
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'in-process-server', version: '1.0.0' } },
      },
    });
  });

  it("the client's id goes in the answer, exact: a string with escapes, an integer beyond 2^53", async () => {
    gate = await inProcessBridge([plain]);
    const odd = 'an "odd" id é 😀';
    const named = await callWithId(gate, odd, 'plain');
    expect(JSON.parse(named!.body!.toString())).toMatchObject({ id: odd });
    const big = await callWithId(gate, aliasOf(BIG_ID)!, 'plain');
    expect(big!.body!.toString()).toContain(`"id":${BIG_ID},`);
    expect(serialize(big!.response)).toContain(`"id":${BIG_ID},`);
  });

  it("a call's progress and log line reach its client before its result", async () => {
    gate = await inProcessBridge([chatty], {}, { logging: true });
    const notified: object[] = [];
    const meta = { ...MODERN_META, progressToken: 'mine', [LOG_LEVEL_META]: 'info' };
    const answer = await gate.ask('tools/call', callParams('chatty', meta), { notified });
    expect(answer).toBeInstanceOf(BytesAnswer);
    expect(notified).toStrictEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'mine', progress: 1 } },
      { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } },
    ]);
  });

  it('an isError result is made of the bytes too; one with its own _meta and an error are read as before', async () => {
    gate = await inProcessBridge([plain, failing, withMeta]);
    await gate.ask('tools/call', callParams('plain'));
    const failed = await parsesOfAnswer(() => gate!.ask('tools/call', callParams('failing')));
    expect(failed.parses).toBe(0);
    expect(JSON.parse(failed.value!.body!.toString())).toMatchObject({ result: { isError: true } });
    const own = await parsesOfAnswer(() => gate!.ask('tools/call', callParams('with-meta')));
    expect(own.parses).toBeGreaterThan(0);
    expect(own.value!.body).toBeUndefined();
    expect(own.value!.response).toMatchObject({
      result: { resultType: 'complete', _meta: { mine: 1, 'io.modelcontextprotocol/serverInfo': {} } },
    });
    const unknown = await gate.ask('tools/call', callParams('no-such-tool'));
    expect(unknown!.body).toBeUndefined();
    expect(unknown!.response).toMatchObject({ error: { message: expect.stringContaining('no-such-tool') } });
  });

  it('a call that becomes a task is answered with the task, and its result read from it', async () => {
    gate = await inProcessBridge([plain]);
    const meta = {
      ...MODERN_META,
      'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    };
    const created = await gate.ask('tools/call', callParams('plain', meta));
    expect(created!.body).toBeUndefined();
    const task = (created!.response as { result: JsonObject }).result;
    expect(task).toMatchObject({ resultType: 'task', status: 'working' });
    for (let poll = 0; ; poll++) {
      const got = (await gate.ask('tasks/get', { taskId: task.taskId as string, _meta: meta }))!.response as {
        result: JsonObject;
      };
      if (got.result.status === 'completed') {
        expect(got.result).toMatchObject({
          result: { content: [{ type: 'text', text: `${MARK} café 😀 "q"` }] },
        });
        break;
      }
      expect(poll).toBeLessThan(200);
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
});

/**
 * The bridge and a Session in front of a server the test writes the lines of, over in-memory pipes as
 * stdio carries them: what the server writes in one go reaches the Session in one read, synchronously.
 */
async function linesServer(answerCall: (id: unknown, progressToken: unknown) => string) {
  const config = resolveConfig({});
  const [fromServer, toServer] = [new PassThrough(), new PassThrough()];
  const store = new MemoryTaskStore({ maxTasks: 10, maxResultBytes: 1_000_000 });
  const { bridge, session } = bridgeSession(
    new LineChannel(fromServer, toServer, 1_000_000, 'the upstream server'),
    { id: 'lines', config, policy: new Policy(config), store, logger: pino({ level: 'silent' }) },
    { upstreamGone: () => undefined, closed: () => undefined },
  );
  const write = (message: object): boolean => fromServer.write(`${JSON.stringify(message)}\n`);
  byteLines(toServer, (line) => {
    const message = JSON.parse(line.toString()) as {
      id?: unknown;
      method: string;
      params?: { _meta?: { progressToken?: unknown } };
    };
    if (message.id === undefined) return;
    if (message.method === 'initialize') {
      const serverInfo = { name: 'lines', version: '1' };
      write({
        jsonrpc: '2.0',
        id: message.id,
        result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo },
      });
    } else if (message.method === 'tools/list') {
      write({
        jsonrpc: '2.0',
        id: message.id,
        result: { tools: [{ name: 'chatty', inputSchema: { type: 'object' } }] },
      });
    } else if (message.method === 'tools/call') {
      fromServer.write(answerCall(message.id, message.params?._meta?.progressToken));
    }
  });
  return {
    bridge,
    close: async () => {
      await session.close();
      await store.close();
    },
  };
}

describe('issue 28: the unread answer keeps its place behind what the server sent before it', () => {
  it('progress written in the same read as the answer reaches the client before it', async () => {
    const { bridge, close } = await linesServer(
      (id, progressToken) =>
        `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: 1 } })}\n` +
        `${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: MARK }] } })}\n`,
    );
    try {
      for (const n of [1, 2]) {
        const notified: object[] = [];
        const meta = { ...MODERN_META, progressToken: `mine-${n}` };
        const answer = await bridge.handle({
          request: { jsonrpc: '2.0', id: n, method: 'tools/call', params: callParams('chatty', meta) },
          notify: (message) => notified.push(message),
          signal: new ClientGiveUp(),
        });
        expect(answer).toBeInstanceOf(BytesAnswer);
        expect(notified).toStrictEqual([
          {
            jsonrpc: '2.0',
            method: 'notifications/progress',
            params: { progressToken: `mine-${n}`, progress: 1 },
          },
        ]);
      }
    } finally {
      await close();
    }
  });
});
