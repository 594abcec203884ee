/**
 * SSE polling through the HTTP gateway in front of an HTTP upstream (issue 34; 2025-11-25 transports,
 * SEP-1699): when the upstream closes a request's stream before its answer, the gateway closes its
 * client's stream of that request alike — an event id to resume from, the upstream's `retry` — and
 * resumes upstream when its client resumes (or after `retry`, if the client has not by then); the answer
 * reaches the client's resumption whenever it comes, kept in the session's bounded event log meanwhile.
 * In the test's own process:
 * startHttpGateway in front of an SDK 1.x server on real sockets (http-serve.js, with a replaying event
 * store), and Streamable HTTP by hand on the front, as the conformance suite's server-sse-polling does.
 */
import { EventEmitter, once } from 'node:events';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { PrometheusMetrics } from '../../src/observability/metrics.js';
import { FixtureEventStore, serveHttp } from '../fixtures/http-serve.js';
import { memoryGateway } from '../helpers/memory-gateway.js';
import { ACCEPT_BOTH, inSession, openSession, post } from '../helpers/raw-http.js';

/** The reconnection delay the upstream asks for: short, so that taskgate, which honours it, resumes soon. */
const UPSTREAM_RETRY_MS = 50;
const BOUND_MS = 5_000;
/** The `retry` of the upstream that replays nothing: taskgate waiting it would miss the test's bound. */
const FORGETFUL_RETRY_MS = 4 * BOUND_MS;

const closing: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** One call of the upstream's `poll` tool: it closes its stream, then answers once released. */
interface HeldCall {
  release(): void;
}

/**
 * Replays nothing on a resumption, as the conformance fixture's server (conformance-everything.js): what
 * its server sent while no stream was open is lost. Says when a resumption took the stream, once the
 * server has it again (after the SDK registered it, which follows the replay).
 */
class ForgetfulStore extends FixtureEventStore {
  constructor(private readonly resumed: EventEmitter) {
    super();
  }

  override async replayEventsAfter(lastEventId: string): Promise<string> {
    const streamId = (await this.getStreamIdForEventId(lastEventId)) ?? '';
    setImmediate(() => this.resumed.emit('resumed'));
    return streamId;
  }
}

/**
 * An SDK server whose `poll` tool closes its SSE stream at once (polling) and answers when released.
 * `forgetful`: with a store that replays nothing, and a `retry` far beyond the test's bound.
 */
async function pollingServer(forgetful = false): Promise<{ url: string; started: EventEmitter }> {
  const started = new EventEmitter();
  const makeServer = () => {
    const server = new McpServer({ name: 'polling', version: '1' });
    server.registerTool('poll', { description: 'closes its stream, then answers' }, async (extra) => {
      extra.closeSSEStream?.();
      const released = new Promise<void>((release) => started.emit('call', { release } satisfies HeldCall));
      await released;
      return { content: [{ type: 'text', text: 'answered after polling' }] };
    });
    return server.server;
  };
  const http = serveHttp(makeServer, 0, 'polling', {
    eventStore: () => (forgetful ? new ForgetfulStore(started) : new FixtureEventStore()),
    retryInterval: forgetful ? FORGETFUL_RETRY_MS : UPSTREAM_RETRY_MS,
  });
  if (!http.listening) await once(http, 'listening');
  closing.push(async () => {
    http.closeAllConnections();
    http.close();
    await once(http, 'close');
  });
  const { port } = http.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/mcp`, started };
}

/** The gateway, and an event per upstream answer it took (then already on its way to the client's stream). */
async function gatewayInFrontOf(url: string, eventLogSize?: number, sharing?: 'shared') {
  const answers = new EventEmitter();
  class Watched extends PrometheusMetrics {
    override upstreamLatency(method: string, seconds: number): void {
      super.upstreamLatency(method, seconds);
      answers.emit('answer', method);
    }
  }
  const config = resolveConfig({
    http: { listen: '127.0.0.1:0', ...(eventLogSize === undefined ? {} : { eventLogSize }) },
    upstream: { url, era: 'legacy', ...(sharing === undefined ? {} : { sharing }) },
  });
  const gateway = await memoryGateway(config, new Watched({ defaultMetrics: false }));
  closing.push(() => gateway.close());
  return { url: gateway.url, answers };
}

const within = <T>(promise: Promise<T>, what: string): Promise<T> =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: not within ${BOUND_MS} ms`)), BOUND_MS).unref(),
    ),
  ]);

interface SseEvent {
  id?: string;
  retry?: number;
  data: string;
}

/** The events of a whole SSE body (the stream must end). */
async function eventsOf(response: Response): Promise<SseEvent[]> {
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const text = await within(response.text(), 'the SSE stream to end');
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const event: SseEvent = { data: '' };
      for (const line of block.split('\n')) {
        const colon = line.indexOf(':');
        const [field, value] = [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
        if (field === 'id') event.id = value;
        else if (field === 'retry') event.retry = Number(value);
        else if (field === 'data') event.data += value;
      }
      return event;
    });
}

const callPoll = (url: URL, sessionId: string, id: number, headers = inSession(sessionId)) =>
  post(
    url,
    { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'poll', arguments: {} } },
    headers,
    AbortSignal.timeout(BOUND_MS),
  );

const resume = (url: URL, sessionId: string, lastEventId: string) =>
  fetch(url, {
    headers: { accept: ACCEPT_BOTH, ...inSession(sessionId), 'last-event-id': lastEventId },
    signal: AbortSignal.timeout(BOUND_MS),
  });

/** The POST's stream, closed by the gateway before its answer: the event id to resume from. */
async function polledStream(response: Response, retry = UPSTREAM_RETRY_MS): Promise<string> {
  expect(response.status).toBe(200);
  const events = await eventsOf(response);
  expect(events).toHaveLength(1);
  const [priming] = events;
  expect(priming).toEqual({ id: expect.any(String), retry, data: '' });
  return priming!.id!;
}

/** A call the upstream holds once it closed its stream to be polled: where the client resumes from, and the call. */
async function polledCall(
  server: { started: EventEmitter },
  url: URL,
  sessionId: string,
  id: number,
  retry?: number,
): Promise<{ lastEventId: string; call: HeldCall }> {
  const held = once(server.started, 'call') as Promise<[HeldCall]>;
  const lastEventId = await polledStream(await callPoll(url, sessionId, id), retry);
  const [call] = await within(held, 'the upstream call');
  return { lastEventId, call };
}

const answerText = (event: SseEvent | undefined) =>
  (JSON.parse(event!.data) as { result: { content: { text: string }[] } }).result.content[0]!.text;

describe('SSE polling through the HTTP gateway in front of an HTTP upstream (SEP-1699)', () => {
  it('closes the client’s stream as the upstream closed its own, and delivers the answer on the client’s resumption', async () => {
    const server = await pollingServer();
    const gateway = await gatewayInFrontOf(server.url);
    const sessionId = await openSession(gateway.url);
    const { lastEventId, call } = await polledCall(server, gateway.url, sessionId, 1);
    // The client resumes at once, before the answer exists (the suite's client does not wait its retry).
    const resumed = await resume(gateway.url, sessionId, lastEventId);
    expect(resumed.status).toBe(200);
    call.release();
    const events = await eventsOf(resumed);
    expect(events).toHaveLength(1);
    expect(events[0]!.id).toEqual(expect.any(String));
    expect(answerText(events[0])).toBe('answered after polling');
  });

  it('resumes upstream when its client resumes, not after retry: the answer a forgetful server sends then reaches the client', async () => {
    const server = await pollingServer(true);
    const gateway = await gatewayInFrontOf(server.url);
    const sessionId = await openSession(gateway.url);
    const { lastEventId, call } = await polledCall(server, gateway.url, sessionId, 1, FORGETFUL_RETRY_MS);
    const upstreamResumed = once(server.started, 'resumed');
    // The client resumes at once (as the suite's client does); the server answers on the stream it then has.
    const resumed = await resume(gateway.url, sessionId, lastEventId);
    expect(resumed.status).toBe(200);
    await within(upstreamResumed, 'taskgate to resume upstream');
    call.release();
    expect(answerText((await eventsOf(resumed))[0])).toBe('answered after polling');
  });

  it('does the same for a session on an upstream session that several client sessions share', async () => {
    const server = await pollingServer();
    const gateway = await gatewayInFrontOf(server.url, undefined, 'shared');
    const sessionIds = [await openSession(gateway.url), await openSession(gateway.url)];
    const { lastEventId, call } = await polledCall(server, gateway.url, sessionIds[1]!, 1);
    const resumed = await resume(gateway.url, sessionIds[1]!, lastEventId);
    expect(resumed.status).toBe(200);
    call.release();
    expect(answerText((await eventsOf(resumed))[0])).toBe('answered after polling');
  });

  it('keeps an answer that came before the client resumed, and replays it on the resumption', async () => {
    const server = await pollingServer();
    const gateway = await gatewayInFrontOf(server.url);
    const sessionId = await openSession(gateway.url);
    const { lastEventId, call } = await polledCall(server, gateway.url, sessionId, 1);
    const answered = once(gateway.answers, 'answer');
    call.release();
    await within(answered, 'taskgate to take the answer upstream');
    const events = await eventsOf(await resume(gateway.url, sessionId, lastEventId));
    expect(events).toHaveLength(1);
    expect(answerText(events[0])).toBe('answered after polling');
  });

  it('a client that never resumes: its answer is kept only as long as the bounded event log holds it', async () => {
    const server = await pollingServer();
    // Two events a session: the priming event and the answer of one call.
    const gateway = await gatewayInFrontOf(server.url, 2);
    const sessionId = await openSession(gateway.url);
    const ids: string[] = [];
    for (const id of [1, 2]) {
      const { lastEventId, call } = await polledCall(server, gateway.url, sessionId, id);
      ids.push(lastEventId);
      const answered = once(gateway.answers, 'answer');
      call.release();
      await within(answered, 'taskgate to take the answer upstream');
    }
    // The first call's events made room for the second's: its resumption is refused, not left hanging.
    const gone = await resume(gateway.url, sessionId, ids[0]!);
    expect(gone.status).toBe(410);
    await gone.text();
    const events = await eventsOf(await resume(gateway.url, sessionId, ids[1]!));
    expect(answerText(events.at(-1))).toBe('answered after polling');
  });

  it('a client before 2025-11-25, which cannot resume a stream, is not made to poll: its answer comes on its POST', async () => {
    const server = await pollingServer();
    const gateway = await gatewayInFrontOf(server.url);
    const sessionId = await openSession(gateway.url);
    const held = once(server.started, 'call') as Promise<[HeldCall]>;
    const response = callPoll(gateway.url, sessionId, 1, {
      ...inSession(sessionId),
      'mcp-protocol-version': '2025-06-18',
    });
    const [call] = await within(held, 'the upstream call');
    call.release();
    const answer = await response;
    expect(answer.headers.get('content-type')).toMatch(/^application\/json/);
    expect((await answer.json()) as object).toMatchObject({
      id: 1,
      result: { content: [{ text: 'answered after polling' }] },
    });
  });
});
