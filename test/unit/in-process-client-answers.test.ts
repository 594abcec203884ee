/**
 * Issue 27: a client frame shaped like a response (no "method", a "result" or an "error") that is
 * malformed is never answered. Its id is in taskgate's numbering, so an error sent back would land on the
 * client's own request of that id; the server's request it answers fails instead, with a clear error.
 * A raw client (no SDK client sends such frames) before taskgate's Session and a real SDK Server, in
 * memory; and the same over the HTTP front, on loopback.
 */
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { HttpFront } from '../../src/transport/http-front.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';
import { Inbox } from '../helpers/inbox.js';
import { rawClient, sessionFor, type RawClient } from '../helpers/raw-client.js';
import { inSession, post } from '../helpers/raw-http.js';
import { INITIALIZE } from '../helpers/taskgate.js';
import { frontOptions } from '../helpers/front-options.js';

type Json = Record<string, unknown>;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Asks the client for input and says how that went: the answer, or the error the server was given. */
const ask: FakeTool = {
  name: 'ask',
  run: async (_args, extra) => {
    try {
      const answer = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { message: 'go on?', requestedSchema: { type: 'object', properties: {} } },
        },
        ElicitResultSchema,
      );
      return textResult(`answered: ${answer.action}`);
    } catch (error) {
      return textResult(`refused: ${error instanceof Error ? error.message : String(error)}`);
    }
  },
};

async function initialized(): Promise<RawClient> {
  const client = await rawClient([ask]);
  cleanups.push(client.close);
  await client.initialize();
  return client;
}

const textOf = (response: Json): string =>
  ((response.result as { content: { text: string }[] }).content[0] ?? { text: '' }).text;

// The server's first request to the client has id 0, as has the client's call: the ids collide, as they
// do between any SDK client and server (each numbers its requests from 0).
const CALL = { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'ask', arguments: {} } };

describe('a malformed answer from the client', () => {
  it.each([
    ['"result": null', '{"jsonrpc":"2.0","id":0,"result":null}', /"result" must be an object/],
    ['"result": 5', '{"jsonrpc":"2.0","id":0,"result":5}', /"result" must be an object/],
    [
      'a result and an error',
      '{"jsonrpc":"2.0","id":0,"result":{"action":"accept"},"error":{"code":1,"message":"x"}}',
      /both a "result" and an "error"/,
    ],
    ['an error that is a string', '{"jsonrpc":"2.0","id":0,"error":"no"}', /"error" must be an object/],
    [
      'an error without a code',
      '{"jsonrpc":"2.0","id":0,"error":{"message":"no"}}',
      /"error" must be an object with a number "code"/,
    ],
    ['"jsonrpc": "1.0"', '{"jsonrpc":"1.0","id":0,"result":{"action":"accept"}}', /"jsonrpc" must be/],
  ])('with %s is not answered; the server’s request fails with the reason', async (_, line, reason) => {
    const client = await initialized();
    client.send(CALL);
    const elicitation = await client.messages.waitFor(
      (m) => m.method === 'elicitation/create',
      'the elicitation',
    );
    expect(elicitation.id).toBe(CALL.id);
    client.write(line);
    const answer = await client.response(CALL.id);
    expect(answer).toHaveProperty('result');
    expect(textOf(answer)).toMatch(
      /^refused: MCP error -32600: The client answered with an invalid JSON-RPC response/,
    );
    expect(textOf(answer)).toMatch(reason);
    client.send({ jsonrpc: '2.0', id: 'fence', method: 'ping' });
    await client.response('fence');
    expect(client.responsesTo(CALL.id)).toEqual([answer]);
  });

  it('that is not JSON fails the request it names; the client gets only the parse error', async () => {
    const client = await initialized();
    client.send(CALL);
    await client.messages.waitFor((m) => m.method === 'elicitation/create', 'the elicitation');
    client.write('{"jsonrpc":"2.0","id":0,"result":{"action":"acc');
    const answer = await client.response(CALL.id);
    expect(textOf(answer)).toBe(
      'refused: MCP error -32600: The client answered with a line that is not valid JSON',
    );
    expect(client.responsesTo(null)).toEqual([
      { jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) },
    ]);
    expect(client.responsesTo(CALL.id)).toEqual([answer]);
  });

  it('that names no request of taskgate’s is dropped without a word', async () => {
    const client = await initialized();
    client.write('{"jsonrpc":"2.0","id":7,"result":5}');
    client.write('{"jsonrpc":"2.0","id":8,"error":{"code":"x"}}');
    client.write('{"jsonrpc":"2.0","result":{}}');
    client.send({ jsonrpc: '2.0', id: 'fence', method: 'ping' });
    await client.response('fence');
    expect(client.messages.items.filter((m) => !('method' in m)).map((m) => m.id)).toEqual(['init', 'fence']);
  });
});

/** The events of an SSE response body, as they arrive. */
function sseMessages(response: Response): Inbox<Json> {
  const messages = new Inbox<Json>();
  void (async () => {
    let buffered = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
        const data = buffered
          .slice(0, end)
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        buffered = buffered.slice(end + 2);
        if (data !== '') messages.push(JSON.parse(data) as Json);
      }
    }
  })().catch(() => undefined);
  return messages;
}

/** The HTTP front before a Session with the `ask` tool, its session initialized; the URL and its headers. */
async function httpSession(maxMessageBytes = 1024 * 1024) {
  const front: HttpFront = new HttpFront(
    frontOptions({ maxMessageBytes }),
    {
      openSession: async (session) => {
        const opened = await sessionFor(session, [ask]);
        cleanups.push(opened.close);
      },
      notReady: async () => undefined,
    },
    pino({ level: 'silent' }),
  );
  const url = await front.listen();
  cleanups.push(() => front.close());
  const opened = await post(url, INITIALIZE);
  await opened.text();
  const headers = inSession(opened.headers.get('mcp-session-id')!);
  expect((await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status).toBe(
    202,
  );
  const call = await post(url, CALL, headers);
  const stream = sseMessages(call);
  const elicitation = await stream.waitFor((m) => m.method === 'elicitation/create', 'the elicitation');
  const answer = (): Promise<Json> =>
    stream.waitFor((m) => m.id === CALL.id && !('method' in m), 'the answer');
  return { url, headers, elicitation, answer };
}

describe('a malformed answer from the client over the HTTP front', () => {
  it('gets 400 with an error of no id, and fails the server’s request it names', async () => {
    const { url, headers, elicitation, answer } = await httpSession();
    const refused = await post(
      url,
      `{"jsonrpc":"2.0","id":${String(elicitation.id)},"result":null}`,
      headers,
    );
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid response: "result" must be an object' },
    });
    expect(textOf(await answer())).toMatch(
      /^refused: MCP error -32600: The client answered with an invalid JSON-RPC response/,
    );
  });

  it('too large gets 413, and fails the server’s request it answers at once', async () => {
    const { url, headers, elicitation, answer } = await httpSession(4096);
    const pad = 'x'.repeat(3 * 4096);
    const refused = await post(
      url,
      `{"result":{"action":"accept","content":{"pad":"${pad}"}},"jsonrpc":"2.0","id":${String(elicitation.id)}}`,
      headers,
    );
    expect(refused.status).toBe(413);
    expect(await refused.json()).toMatchObject({ id: null, error: { code: -32600 } });
    const text = textOf(await answer());
    expect(text).toMatch(/^refused: MCP error -32600: The client answered with a response it could not take/);
    expect(text).toMatch(/exceeds the limit of 4096 bytes/);
  });
});
