/**
 * How the HTTP front answers a 2026-07-28 POST (transport/modern-answer.ts): one object per request is its
 * give-up signal and its answer's sink, and the front's OpenAnswers counts it open until its answer is
 * handed to the socket. In the test's own process: startHttpGateway in front of an SDK 1.x server on a
 * real socket (in-process-http.ts), requests by hand (modern-raw.ts).
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { startHttpGateway } from '../../src/http-proxy.js';
import { PrometheusMetrics } from '../../src/observability/metrics.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AnswerSink, ModernExchange } from '../../src/protocol/modern/exchange.js';
import { readMessage } from '../../src/protocol/read-message.js';
import { OpenAnswers, postModern } from '../../src/transport/modern-answer.js';
import { readBody } from '../../src/transport/http-io.js';
import { Inbox } from '../helpers/inbox.js';
import { fakeServer, subscribableServer, textResult } from '../helpers/in-process.js';
import { serveInProcess } from '../helpers/in-process-http.js';
import { until } from '../helpers/tool-results.js';
import { MODERN_VERSION } from '../helpers/modern-client.js';
import { listen, modernRequest } from '../helpers/modern-raw.js';

/** A client that declares nothing: its calls are plain, never tasks. */
const PLAIN_META = {
  'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-plain-client', version: '1' },
};

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** The gateway in front of one in-process server; `close` stops the gateway (the server is closed after). */
async function gatewayFor(makeServer: Parameters<typeof serveInProcess>[0]) {
  const http = await serveInProcess(makeServer, 'server');
  closing.push(() => http.close());
  const config = resolveConfig({
    http: { listen: '127.0.0.1:0' },
    upstream: { url: http.url, era: 'legacy' },
  });
  const store = new MemoryTaskStore({ maxTasks: 100, maxResultBytes: 1_000_000 });
  const running = await startHttpGateway(
    config,
    pino({ level: 'silent' }),
    store,
    new PrometheusMetrics({ defaultMetrics: false }),
  );
  let closed: Promise<void> | undefined;
  const close = () => (closed ??= running.close().then(() => store.close()));
  closing.push(close);
  return { url: running.url, close };
}

describe('a 2026-07-28 POST answered by the HTTP front', () => {
  it('is given up when its client closes the request: the server hears its call cancelled', async () => {
    const started = new Inbox<string>();
    const cancelled = new Inbox<string>();
    const { url } = await gatewayFor(
      () =>
        fakeServer([
          {
            name: 'wait',
            run: (_args, extra) =>
              new Promise((resolve) => {
                started.push('started');
                extra.signal.addEventListener('abort', () => {
                  cancelled.push(String(extra.signal.reason ?? 'aborted'));
                  resolve(textResult('stopped'));
                });
              }),
          },
        ]).server,
    );
    const client = new AbortController();
    const posting = fetch(url, {
      method: 'POST',
      signal: client.signal,
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'mcp-protocol-version': MODERN_VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': 'wait',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'wait', arguments: {}, _meta: PLAIN_META },
      }),
    });
    await started.waitFor(() => true, 'the call to start');
    client.abort();
    await expect(posting).rejects.toThrow(/abort/i);
    expect(await cancelled.waitFor(() => true, 'the call to be cancelled')).toBeTruthy();
  });

  it('answers calls one after another on one connection, each with its own result', async () => {
    const { url } = await gatewayFor(
      () => fakeServer([{ name: 'echo', run: (args) => textResult(String(args.text)) }]).server,
    );
    for (const text of ['one', 'two', 'three']) {
      const answer = await modernRequest(
        url,
        'tools/call',
        { name: 'echo', arguments: { text } },
        PLAIN_META,
      );
      expect(answer.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text }] });
    }
  });

  it('ends an open subscriptions/listen stream with its closing result when taskgate closes', async () => {
    const { url, close } = await gatewayFor(() => subscribableServer('server', new Inbox<string>()));
    const stream = await listen(url, { toolsListChanged: true });
    await stream.until((message) => message.method === 'notifications/subscriptions/acknowledged');
    const closed = close();
    const closingResult = await stream.until((message) => 'result' in message);
    expect(closingResult).toMatchObject({ result: { resultType: 'complete' } });
    await closed;
  });
});

/**
 * postModern alone on a real HTTP server, with `serve` standing where the bridge is: what the front does
 * with each way a request's serving can end, and that no answer stays counted open once it is over.
 */
async function frontWith(serve: (exchange: ModernExchange, sink: AnswerSink) => void) {
  const answers = new OpenAnswers();
  const failures: unknown[] = [];
  const front = {
    accepting: () => true,
    upstreamChallenge: undefined,
    answers,
    failed: (res: ServerResponse, error: unknown) => {
      failures.push(error);
      res.writeHead(500).end();
    },
  };
  const server = createServer((req, res) => {
    void readBody(req, 1_000_000).then((body) => {
      const read = readMessage(body as Buffer, 'the client');
      if (read.ok) postModern(req, res, read.message, undefined, serve, front);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  closing.push(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  const post = (signal?: AbortSignal) =>
    fetch(url, {
      method: 'POST',
      ...(signal && { signal }),
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'mcp-protocol-version': MODERN_VERSION,
        'mcp-method': 'tools/call',
        'mcp-name': 'echo',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'echo', arguments: {}, _meta: PLAIN_META },
      }),
    });
  return { answers, failures, post };
}

const answerOf = (exchange: ModernExchange) => ({
  response: { jsonrpc: '2.0', id: exchange.request.id, result: { resultType: 'complete', content: [] } },
});

describe('postModern and the answers it counts open', () => {
  it('counts none open once an answer is written, as JSON or at the end of an SSE stream', async () => {
    let served = 0;
    const { answers, post } = await frontWith((exchange, sink) => {
      // Every other request has a message before its answer: its response becomes an SSE stream.
      if (served++ % 2 === 1) exchange.notify({ jsonrpc: '2.0', method: 'notifications/message' });
      sink.answer(answerOf(exchange));
    });
    const types = [];
    for (let n = 0; n < 4; n++) {
      const response = await post();
      types.push(response.headers.get('content-type'));
      expect(await response.text()).toContain('"id":7');
    }
    expect(types).toEqual(['application/json', 'text/event-stream', 'application/json', 'text/event-stream']);
    expect(answers.size).toBe(0);
  });

  it('counts none open once an answer too big to hand the socket at once is written', async () => {
    const big = 'x'.repeat(8 * 1024 * 1024);
    const { answers, post } = await frontWith((exchange, sink) =>
      sink.answer({
        response: {
          jsonrpc: '2.0',
          id: exchange.request.id,
          result: { resultType: 'complete', content: [{ type: 'text', text: big }] },
        },
      }),
    );
    const response = await post();
    expect((await response.text()).length).toBeGreaterThan(big.length);
    await until(async () => answers.size === 0, 'the big answer to be over');
  });

  it('counts none open once a given-up request is answered with nothing', async () => {
    const started = new Inbox<AnswerSink>();
    const { answers, post } = await frontWith((exchange, sink) => {
      exchange.signal.addEventListener('abort', () => sink.answer(undefined));
      started.push(sink);
    });
    const client = new AbortController();
    const posting = post(client.signal);
    await started.waitFor(() => true, 'the request to be served');
    expect(answers.size).toBe(1);
    client.abort();
    await expect(posting).rejects.toThrow(/abort/i);
    await until(async () => answers.size === 0, 'the given-up answer to be over');
  });

  it('answers 500 when serving throws at once, and counts it open no longer', async () => {
    const { answers, failures, post } = await frontWith(() => {
      throw new Error('the bridge broke');
    });
    expect((await post()).status).toBe(500);
    expect(failures).toEqual([new Error('the bridge broke')]);
    expect(answers.size).toBe(0);
  });
});

describe('OpenAnswers', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  const post = () => ({}) as Parameters<OpenAnswers['add']>[0];

  it('is settled at once with nothing open', async () => {
    await expect(new OpenAnswers().settled(60_000)).resolves.toBeUndefined();
  });

  it('is settled once the last open answer is written, and not before', async () => {
    vi.useFakeTimers();
    const answers = new OpenAnswers();
    const [first, second] = [post(), post()];
    answers.add(first);
    answers.add(second);
    let settled = false;
    const settling = answers.settled(60_000).then(() => (settled = true));
    answers.delete(first);
    await vi.advanceTimersByTimeAsync(0);
    expect(settled).toBe(false);
    answers.delete(second);
    await settling;
    expect(settled).toBe(true);
  });

  it('is settled after its bound when an answer is never written', async () => {
    vi.useFakeTimers();
    const answers = new OpenAnswers();
    answers.add(post());
    let settled = false;
    const settling = answers.settled(1_000).then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await settling;
    expect(settled).toBe(true);
  });
});
