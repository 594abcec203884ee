/**
 * Issue 27: a client line over maxMessageBytes is dropped unread. When its first and last bytes show a
 * response, it is not answered (its id is taskgate's numbering, and an error would land on the client's
 * own request of that id); the server's request it answers fails instead. A request still gets its error.
 * The client's stdio channel (LineChannel over in-memory pipes) before taskgate's Session and a real SDK
 * Server.
 */
import { PassThrough } from 'node:stream';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { LineChannel } from '../../src/transport/line-channel.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';
import { jsonLines } from '../helpers/inbox.js';
import { sessionFor } from '../helpers/raw-client.js';
import { INITIALIZE } from '../helpers/taskgate.js';

type Json = Record<string, unknown>;

const LIMIT = 4096;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

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

async function stdioClient() {
  const input = new PassThrough();
  const output = new PassThrough();
  const opened = await sessionFor(new LineChannel(input, output, LIMIT, 'the client'), [ask]);
  cleanups.push(opened.close);
  const messages = jsonLines<Json>(output);
  const write = (line: string): void => void input.write(`${line}\n`);
  const send = (message: Json): void => write(JSON.stringify(message));
  const isResponse = (m: Json): boolean => !('method' in m);
  const response = (id: unknown): Promise<Json> =>
    messages.waitFor((m) => m.id === id && isResponse(m), `the response to ${JSON.stringify(id)}`);
  const responsesTo = (id: unknown): Json[] => messages.items.filter((m) => m.id === id && isResponse(m));
  send(INITIALIZE);
  await response('init');
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { messages, write, send, response, responsesTo };
}

const pad = 'x'.repeat(2 * LIMIT);
const CALL = { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: 'ask', arguments: {} } };

describe('an oversized line from the client', () => {
  it.each([
    [
      'id last, as the SDK writes',
      `{"result":{"action":"accept","content":{"pad":"${pad}"}},"jsonrpc":"2.0","id":0}`,
    ],
    ['id first', `{"jsonrpc":"2.0","id":0,"result":{"action":"accept","content":{"pad":"${pad}"}}}`],
    ['an error', `{"jsonrpc":"2.0","id":0,"error":{"code":-1,"message":"${pad}"}}`],
  ])('shaped like a response (%s) is not answered; the server’s request fails', async (_, line) => {
    const client = await stdioClient();
    client.send(CALL);
    const elicitation = await client.messages.waitFor(
      (m) => m.method === 'elicitation/create',
      'the elicitation',
    );
    expect(elicitation.id).toBe(CALL.id);
    client.write(line);
    const answer = await client.response(CALL.id);
    const text = (answer.result as { content: { text: string }[] }).content[0]!.text;
    expect(text).toMatch(/^refused: MCP error -32600: The client answered with a response it could not take/);
    expect(text).toMatch(/exceeds the limit of 4096 bytes/);
    client.send({ jsonrpc: '2.0', id: 'fence', method: 'ping' });
    await client.response('fence');
    expect(client.responsesTo(CALL.id)).toEqual([answer]);
  });

  it('that answers no request of taskgate’s is dropped without a word', async () => {
    const client = await stdioClient();
    client.write(`{"jsonrpc":"2.0","id":7,"result":{"pad":"${pad}"}}`);
    client.send({ jsonrpc: '2.0', id: 'fence', method: 'ping' });
    await client.response('fence');
    expect(client.messages.items.filter((m) => !('method' in m)).map((m) => m.id)).toEqual(['init', 'fence']);
  });

  it('shaped like a request gets its error, addressed to its id', async () => {
    const client = await stdioClient();
    client.write(
      `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"pad":"${pad}"}}}`,
    );
    const answer = await client.response(5);
    expect(answer.error).toMatchObject({ code: -32600, message: expect.stringMatching(/exceeds the limit/) });
  });
});
