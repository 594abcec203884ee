/**
 * A plain 2026-07-28 call's answer made from the upstream's bytes (result-bytes.ts) is, as a JSON value,
 * the answer taskgate made before by parsing, toModernResult and serializing: the bridge's `response`
 * beside the bytes is still made that way, and each case compares the two. Behind the bridge a real
 * Session and SDK 1.x server in this process; the HTTP front on loopback for what a client reads.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { successResponse, type JsonObject } from '../../src/protocol/messages.js';
import { aliasOf, serialize } from '../../src/protocol/exact-ids.js';
import { addedMembers, toolResultBytes } from '../../src/protocol/modern/result-bytes.js';
import { toModernResult } from '../../src/protocol/modern/results.js';
import { HttpFront } from '../../src/transport/http-front.js';
import { MODERN_META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { sendProgress, textResult, type FakeTool } from '../helpers/in-process.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { post } from '../helpers/raw-http.js';
import { frontOptions } from '../helpers/front-options.js';

/** Every escape JSON has, a lone surrogate, a line separator, astral and markup characters. */
const ODD = '"quoted" \\ back\\slash \u0000\u001f\b\f\n\r\t \u2028\u2029 \ud800 lone 😀 </script> é';
const BIG = ODD.repeat(20_000);

const tools: FakeTool[] = [
  { name: 'echo', run: (args) => textResult(String(args.text)) },
  { name: 'failing', run: () => ({ ...textResult('it broke'), isError: true }) },
  {
    name: 'big',
    run: () => ({ ...textResult(BIG), structuredContent: { odd: ODD, n: [1, 2.5, -0, 1e300] } }),
  },
  { name: 'empty', run: () => ({ content: [] }) },
  { name: 'own-meta', run: () => ({ ...textResult('x'), _meta: { mine: 1 } }) },
  {
    name: 'progress',
    run: async (_args, extra) => {
      await sendProgress(extra);
      return textResult('done');
    },
  },
];

const SERVER_INFO = { 'io.modelcontextprotocol/serverInfo': { name: 'in-process-server', version: '1.0.0' } };

describe('a plain call answered from the upstream bytes, against the parsed answer', () => {
  let bridge: InProcessBridge;
  let front: HttpFront;
  let url: URL;

  beforeAll(async () => {
    bridge = await inProcessBridge(tools);
    front = new HttpFront(
      frontOptions(),
      {
        openSession: () => Promise.reject(new Error('no 2025 session here')),
        notReady: async () => undefined,
        modern: (exchange, sink) => bridge.serveTo(exchange, sink),
      },
      pino({ level: 'silent' }),
    );
    url = await front.listen();
  });
  afterAll(async () => {
    await front?.close();
    await bridge?.close();
  });

  const params = (name: string, meta: object = MODERN_META) => ({
    name,
    arguments: { text: 'hi' },
    _meta: meta,
  });

  it.each(['echo', 'failing', 'big', 'empty'])('%s: bytes, equal to the parsed answer', async (name) => {
    const answer = await bridge.ask('tools/call', params(name));
    expect(answer?.body).toBeDefined();
    const fromBytes: unknown = JSON.parse(answer!.body!.toString('utf8'));
    expect(fromBytes).toStrictEqual(answer!.response);
    expect(fromBytes).toMatchObject({ result: { resultType: 'complete', _meta: SERVER_INFO } });
  });

  it('a result with its own _meta, and an error, are answered as before (no bytes)', async () => {
    const own = await bridge.ask('tools/call', params('own-meta'));
    expect(own?.body).toBeUndefined();
    expect(own?.response).toMatchObject({
      result: { resultType: 'complete', _meta: { mine: 1, ...SERVER_INFO } },
    });
    const unknown = await bridge.ask('tools/call', params('no-such-tool'));
    expect(unknown?.body).toBeUndefined();
  });

  const headers = (name: string) => ({
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': 'tools/call',
    'mcp-name': name,
  });

  it('over HTTP: the big result as JSON, with the client id, equal to what the parsed path gives', async () => {
    const request = { jsonrpc: '2.0', id: 'an "odd" id', method: 'tools/call', params: params('big') };
    const response = await post(url, request, headers('big'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = (await response.json()) as { id: unknown; result: JsonObject };
    const expected = (await bridge.ask('tools/call', params('big')))!.response as { result: JsonObject };
    expect(body).toStrictEqual({ jsonrpc: '2.0', id: 'an "odd" id', result: expected.result });
  });

  it('over HTTP: a call with progress ends its SSE stream with the same answer', async () => {
    const meta = { ...MODERN_META, progressToken: 'p' };
    const request = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: params('progress', meta) };
    const response = await post(url, request, headers('progress'));
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const events = (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as unknown);
    expect(events).toStrictEqual([
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'p', progress: 1 } },
      {
        jsonrpc: '2.0',
        id: 7,
        result: { content: [{ type: 'text', text: 'done' }], resultType: 'complete', _meta: SERVER_INFO },
      },
    ]);
  });
});

describe('toolResultBytes, on bytes an upstream may send', () => {
  // Not ASCII, as a server's name or a client's id may be: the answer's length is summed in UTF-8 bytes.
  const serverInfo = { name: 's é 😀', version: '1' };
  const bigId = aliasOf('9007199254740993')!;
  const added = addedMembers(serverInfo);
  /** The answer parsed and remade, as the bridge makes it without bytes. */
  const parsedAnswer = (raw: string, id: string | number) =>
    successResponse(
      id,
      toModernResult('tools/call', (JSON.parse(raw) as { result: JsonObject }).result, { serverInfo }),
    );

  it.each([
    [
      'members in another order, spaces',
      '{ "result" : { "content" : [ ] , "isError" : false } , "id" : 3, "jsonrpc": "2.0" }',
    ],
    ['an empty result, spaced', '{"jsonrpc":"2.0","id":3,"result":{ \t}}'],
    ['an empty result', '{"jsonrpc":"2.0","id":3,"result":{}}'],
    [
      'a duplicate result: the last counts',
      '{"jsonrpc":"2.0","id":3,"result":{"a":1},"result":{"b":"}{\\"result\\":"}}',
    ],
    [
      'keys that look like the added ones',
      '{"jsonrpc":"2.0","id":3,"result":{"resultType ":1,"_meta\\u0000":2}}',
    ],
  ])('%s', (_what, raw) => {
    for (const id of [9, 'x"y', 'é 😀', bigId]) {
      const bytes = toolResultBytes(
        Buffer.from(raw),
        id,
        (JSON.parse(raw) as { result: JsonObject }).result,
        added,
      );
      const text = bytes!.toString('utf8');
      expect(JSON.parse(text)).toStrictEqual(JSON.parse(serialize(parsedAnswer(raw, id))));
      // A large integer id goes out as the digits it came with.
      if (id === bigId) expect(text).toContain('"id":9007199254740993,');
    }
  });

  it.each([
    ['a resultType of its own', '{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete"}}'],
    ['a _meta of its own', '{"jsonrpc":"2.0","id":3,"result":{"_meta":{}}}'],
    ['a top-level key with an escape', '{"jsonrpc":"2.0","id":3,"result":{"a":1},"r\\u0065sult":{"b":2}}'],
    ['a line break (an SSE data line cannot hold it)', '{"jsonrpc":"2.0","id":3,\n"result":{}}'],
  ])('none for %s', (_what, raw) => {
    const result = (JSON.parse(raw) as { result: JsonObject }).result;
    expect(toolResultBytes(Buffer.from(raw), 3, result, added)).toBeUndefined();
  });
});
