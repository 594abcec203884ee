/**
 * What the HTTP front refuses of a 2026-07-28 request, read off the wire (basic/index.mdx "Per-request
 * protocol fields", streamable-http.mdx "Server Validation", mrtr.mdx "Server Requirements"): taskgate's
 * HttpFront on loopback, its modern bridge and Session in this process, and behind them a real SDK 1.x
 * Server over a memory channel, with the legacy fixture's echo and elicit tools. Moved here from
 * test/integration/modern-front.test.ts (issue 29), where a taskgate process and its fixture did the same.
 */
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpFront } from '../../src/transport/http-front.js';
import { MODERN_META as META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { post } from '../helpers/raw-http.js';
import { textOf } from '../helpers/tool-results.js';
import { frontOptions } from '../helpers/front-options.js';

const echo: FakeTool = { name: 'echo', run: (args) => textResult(String(args.text)) };
/** As the legacy fixture's (tools.js): asks for an `answer` (form mode), returns what the client gave. */
const elicitTool: FakeTool = {
  name: 'elicit',
  run: async (args, extra) => {
    const result = await extra.sendRequest(
      {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: String(args.message),
          requestedSchema: {
            type: 'object',
            properties: { answer: { type: 'string' } },
            required: ['answer'],
          },
        },
      },
      ElicitResultSchema,
    );
    return textResult(JSON.stringify({ action: result.action, content: result.content }));
  },
};

/** The headers a 2026-07-28 request carries (streamable-http.mdx "Request Metadata"). */
function routing(method: string, name?: string, version = MODERN_VERSION): Record<string, string> {
  return {
    'mcp-protocol-version': version,
    'mcp-method': method,
    ...(name === undefined ? {} : { 'mcp-name': name }),
  };
}

interface Answer {
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

describe('the HTTP front refuses what a 2026-07-28 request must not be, with the request id', () => {
  let url: URL;
  let bridge: InProcessBridge;
  let front: HttpFront;

  beforeAll(async () => {
    bridge = await inProcessBridge([echo, elicitTool]);
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

  const call = (id: number, name: string, meta: object = META) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name, arguments: { text: 'x' }, _meta: meta },
  });

  it('Mcp-Name that differs from the body: 400, -32020', async () => {
    const response = await post(url, call(11, 'echo'), routing('tools/call', 'other'));
    expect(response.status).toBe(400);
    const answer = (await response.json()) as Answer;
    expect(answer).toMatchObject({ id: 11, error: { code: -32020 } });
    expect(answer.error!.message).toContain("'other'");
  });

  it('a version taskgate does not serve: 400, -32022 with what it supports (header and _meta agree)', async () => {
    const meta = { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
    const response = await post(url, call(12, 'echo', meta), routing('tools/call', 'echo', '2099-01-01'));
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 12,
      error: {
        code: -32022,
        message: 'Unsupported protocol version',
        data: {
          supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
          requested: '2099-01-01',
        },
      },
    });
  });

  it('a missing clientCapabilities: 400, -32602 naming the key', async () => {
    const { 'io.modelcontextprotocol/clientCapabilities': _, ...meta } = META;
    const response = await post(url, call(13, 'echo', meta), routing('tools/call', 'echo'));
    expect(response.status).toBe(400);
    const answer = (await response.json()) as Answer;
    expect(answer).toMatchObject({ id: 13, error: { code: -32602 } });
    expect(answer.error!.message).toContain('io.modelcontextprotocol/clientCapabilities');
  });

  it('methods 2026-07-28 removed: 404, -32601 that says so', async () => {
    for (const method of ['ping', 'logging/setLevel', 'tasks/result', 'tasks/list']) {
      const body = { jsonrpc: '2.0', id: 14, method, params: { _meta: META, level: 'info', taskId: 't' } };
      const response = await post(url, body, routing(method));
      expect(response.status, method).toBe(404);
      const answer = (await response.json()) as Answer;
      expect(answer, method).toMatchObject({ id: 14, error: { code: -32601 } });
    }
  });

  it('tasks/get without the tasks extension declared: 400, -32021 with requiredCapabilities', async () => {
    const body = { jsonrpc: '2.0', id: 15, method: 'tasks/get', params: { taskId: 't1', _meta: META } };
    const response = await post(url, body, routing('tasks/get', 't1'));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      id: 15,
      error: {
        code: -32021,
        data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } },
      },
    });
  });

  it('GET and DELETE with a 2026-07-28 version: 405, POST allowed', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(url, {
        method,
        headers: { accept: 'text/event-stream', 'mcp-protocol-version': MODERN_VERSION },
      });
      expect(response.status, method).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      await response.body?.cancel();
    }
  });

  it('a requestState is good for one retry of its own request: a second use, or another request, is -32602', async () => {
    const first = (await (await post(url, elicit(21), routing('tools/call', 'elicit'))).json()) as Answer;
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const { requestState, inputRequests } = first.result as {
      requestState: string;
      inputRequests: Record<string, { method: string }>;
    };
    const [key] = Object.keys(inputRequests);
    expect(inputRequests[key!]!.method).toBe('elicitation/create');
    const answers = { [key!]: { action: 'accept', content: { answer: 'once' } } };
    const retry = (id: number, message = 'who?') =>
      post(
        url,
        elicit(id, message, { requestState, inputResponses: answers }),
        routing('tools/call', 'elicit'),
      );

    const elsewhere = (await (await retry(22, 'another question')).json()) as Answer;
    expect(elsewhere).toMatchObject({ id: 22, error: { code: -32602 } });
    expect(elsewhere.error!.message).toContain('issued for another request');

    const done = (await (await retry(23)).json()) as Answer;
    expect(JSON.parse(textOf(done.result!))).toEqual({ action: 'accept', content: { answer: 'once' } });

    const again = (await (await retry(24)).json()) as Answer;
    expect(again).toMatchObject({ id: 24, error: { code: -32602 } });
    expect(again.error!.message).toContain('already used');
  });

  it('a tampered requestState is refused, and so is inputResponses without one', async () => {
    const tampered = (await (
      await post(
        url,
        elicit(31, 'who?', { requestState: 'v1.e30.AAAA', inputResponses: {} }),
        routing('tools/call', 'elicit'),
      )
    ).json()) as Answer;
    expect(tampered).toMatchObject({ id: 31, error: { code: -32602 } });
    const without = (await (
      await post(url, elicit(32, 'who?', { inputResponses: { k: {} } }), routing('tools/call', 'elicit'))
    ).json()) as Answer;
    expect(without).toMatchObject({ id: 32, error: { code: -32602 } });
    expect(without.error!.message).toContain('without requestState');
  });

  it('input the request did not declare it can give: 400, -32021 naming it, and the call is given up upstream', async () => {
    const meta = { ...META, 'io.modelcontextprotocol/clientCapabilities': {} };
    const response = await post(url, elicit(41, 'who?', {}, meta), routing('tools/call', 'elicit'));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      id: 41,
      error: { code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } },
    });
  });

  function elicit(id: number, message = 'who?', extra: object = {}, meta: object = META) {
    return {
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'elicit', arguments: { message }, _meta: meta, ...extra },
    };
  }
});

describe('a 2026-07-28 request whose serving fails', () => {
  it('is answered 500 and logged, as any request whose handling throws', async () => {
    const logged: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void logged.push(line) });
    const front = new HttpFront(
      frontOptions(),
      {
        openSession: () => Promise.reject(new Error('no session here')),
        notReady: async () => undefined,
        modern: (_exchange, sink) => sink.failed(new Error('the store threw')),
      },
      logger,
    );
    const at = await front.listen();
    try {
      const response = await post(
        at,
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } },
        routing('tools/list'),
      );
      expect(response.status).toBe(500);
      expect(await response.json()).toMatchObject({ error: { message: 'Internal error in taskgate' } });
      expect(logged.join('')).toContain('the store threw');
    } finally {
      await front.close();
    }
  });
});
