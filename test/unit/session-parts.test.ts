/**
 * The parts a Session is wired from, each on its own: the upstream peer (what is in flight upstream and
 * how it ends unanswered), the correlator (which client request or task an upstream message belongs
 * with) and the requests answered locally (one reply path; cancelled ones unanswered).
 */
import { setImmediate } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ErrorCode, ProtocolError } from '../../src/protocol/errors.js';
import type { RequestId } from '../../src/protocol/messages.js';
import { Pieces } from '../../src/protocol/pieces.js';
import { Correlator } from '../../src/session/correlator.js';
import { ServedRequests } from '../../src/session/served-requests.js';
import { UpstreamPeer, type Forwarded, type UpstreamError } from '../../src/session/upstream-peer.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { Inbox } from '../helpers/inbox.js';

const logger = pino({ level: 'silent' });

afterEach(() => {
  vi.useRealTimers();
});

/** An upstream peer whose far end records what it is sent. */
function upstreamPeer(options: { requestTimeoutMs?: number; holdsRequests?: boolean } = {}) {
  const { a, b } = memoryChannelPair();
  const sent: object[] = [];
  b.start({
    message: (raw) => sent.push(JSON.parse(raw.toString())),
    malformed: () => undefined,
    closed: () => undefined,
  });
  a.start({ message: () => undefined, malformed: () => undefined, closed: () => undefined });
  const unanswered: { entry: Forwarded; wireId: RequestId | undefined; error: UpstreamError }[] = [];
  const peer = new UpstreamPeer(a, {
    requestTimeoutMs: options.requestTimeoutMs ?? 60_000,
    holdsRequests: options.holdsRequests ?? false,
    logger,
    unanswered: (entry, wireId, error) => unanswered.push({ entry, wireId, error }),
  });
  return { peer, sent, unanswered };
}

const forwarded = (clientId: RequestId, method = 'tools/call'): Forwarded => ({
  kind: 'client',
  clientId,
  method,
  sentAt: 0,
});

/** A client request sent on as the session forwards one: the id it went as. */
function forward(peer: UpstreamPeer, id: RequestId, method: string): RequestId {
  const wireId = peer.register(id, forwarded(id, method));
  peer.send({ jsonrpc: '2.0', id, method }, wireId, undefined);
  return wireId;
}

describe('UpstreamPeer', () => {
  it('ends a forwarded request at its deadline: the upstream is told to stop, the client is owed the error', async () => {
    vi.useFakeTimers();
    const { peer, sent, unanswered } = upstreamPeer({ requestTimeoutMs: 1_000 });
    const wireId = forward(peer, 7, 'tools/call');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sent).toContainEqual({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: wireId, reason: 'Upstream server did not answer tools/call within 1000 ms' },
    });
    expect(unanswered).toEqual([
      {
        entry: forwarded(7),
        wireId,
        error: {
          code: ErrorCode.UpstreamUnavailable,
          message: 'Upstream server did not answer tools/call within 1000 ms',
        },
      },
    ]);
    expect(peer.awaits(wireId)).toBe(false);
  });

  it('never cancels initialize at its deadline (MCP), and settles an own call with the error', async () => {
    vi.useFakeTimers();
    const { peer, sent, unanswered } = upstreamPeer({ requestTimeoutMs: 500 });
    forward(peer, 1, 'initialize');
    const own = peer.call('tasks/list', {});
    await vi.advanceTimersByTimeAsync(500);
    const answer = await own.done;
    expect(answer?.response).toMatchObject({ error: { code: ErrorCode.UpstreamUnavailable } });
    expect(unanswered.map((u) => u.entry.method)).toEqual(['initialize']);
    const cancelled = sent.filter((m) => (m as { method?: string }).method === 'notifications/cancelled');
    expect(cancelled).toEqual([
      expect.objectContaining({ params: expect.objectContaining({ requestId: own.wireId }) }),
    ]);
  });

  it('gone: fails what is in flight with the reason, refuses own calls, and is back when told', async () => {
    const { peer, unanswered } = upstreamPeer();
    forward(peer, 'a', 'tools/list');
    const inFlight = peer.call('tasks/get', { taskId: 't' });
    peer.away('exited with code 3', false);
    peer.failInFlight('exited with code 3');
    expect((await inFlight.done)?.response).toMatchObject({
      error: { message: 'Upstream server unavailable: exited with code 3' },
    });
    expect(unanswered.map((u) => u.error.message)).toEqual([
      'Upstream server unavailable: exited with code 3 before answering tools/list',
    ]);
    expect(peer.refuses).toBe(true);
    expect((await peer.call('tasks/get', {}).done)?.response).toMatchObject({
      error: {
        code: ErrorCode.UpstreamUnavailable,
        message: 'Upstream server unavailable: exited with code 3',
      },
    });
    peer.back();
    expect(peer.isAway).toBe(false);
    expect(peer.refuses).toBe(false);
  });

  it('holds requests for an upstream being restarted, when told to, and says it is being restarted', () => {
    const holding = upstreamPeer({ holdsRequests: true }).peer;
    holding.away('exited', true);
    expect(holding.isAway).toBe(true);
    expect(holding.refuses).toBe(false);
    const refusing = upstreamPeer({ holdsRequests: false }).peer;
    refusing.away('exited', true);
    expect(refusing.refuses).toBe(true);
    expect(refusing.unavailable().message).toBe(
      'Upstream server unavailable: exited, and is being restarted',
    );
  });

  it('withdraws a forwarded request by the client’s id, whatever id it went as', () => {
    const { peer } = upstreamPeer();
    const first = forward(peer, 5, 'ping');
    // The same client id again while the first is in flight goes under an id of taskgate's.
    const second = forward(peer, 5, 'ping');
    expect(second).not.toBe(first);
    expect(peer.clientRequestOf(second)).toBe(5);
    expect(peer.withdraw(5)).toBe(first);
    expect(peer.withdraw(5)).toBe(second);
    expect(peer.withdraw(5)).toBeUndefined();
  });
});

describe('Correlator', () => {
  function correlator(running: { onCall?: string; sole?: string; unwrapped?: RequestId } = {}) {
    return new Correlator({
      clientRequestOf: (wireId) => (wireId === 'w-stream' ? 'client-on-stream' : undefined),
      unwrappedCallOf: (taskId) => (taskId === 'unwrapped' ? running.unwrapped : undefined),
      taskOfCall: (wireId) => (wireId === 'w-task' ? running.onCall : undefined),
      soleRunningTask: () => running.sole,
    });
  }

  it('routes by the stream first, then the progress token, then the task’s open tasks/result', () => {
    const c = correlator();
    c.requestOpened('r1', { _meta: { progressToken: 'p1' } });
    const close = c.taskResultOpened('t1', 'r2');
    const params = {
      progressToken: 'p1',
      _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't1' } },
    };
    expect(c.routeFor(params, { onStreamOf: 'w-stream' })).toEqual({ relatedTo: 'client-on-stream' });
    expect(c.routeFor(params, undefined)).toEqual({ relatedTo: 'r1' });
    c.requestAnswered('r1');
    expect(c.routeFor(params, undefined)).toEqual({ relatedTo: 'r2' });
    close();
    expect(c.routeFor(params, undefined)).toBeUndefined();
  });

  it('keeps a progress token with the request that gave it last, not an earlier answered one', () => {
    const c = correlator();
    c.requestOpened('old', { _meta: { progressToken: 9 } });
    c.requestOpened('new', { _meta: { progressToken: 9 } });
    c.requestAnswered('old');
    expect(c.routeFor({ progressToken: 9 }, undefined)).toEqual({ relatedTo: 'new' });
  });

  it('gives an untagged request for input to the sole running task only while no plain call is upstream', () => {
    const c = correlator({ sole: 'only-task' });
    expect(c.taskOfRequest('elicitation/create', undefined)).toBe('only-task');
    expect(c.taskOfRequest('roots/list', undefined)).toBeUndefined();
    c.plainCallSent('plain-1');
    expect(c.taskOfRequest('elicitation/create', undefined)).toBeUndefined();
    c.plainCallEnded('plain-1');
    expect(c.taskOfRequest('sampling/createMessage', undefined)).toBe('only-task');
    c.plainCallSent('plain-2');
    c.plainCallsLost();
    expect(c.taskOfRequest('sampling/createMessage', undefined)).toBe('only-task');
  });

  it('names the task whose call’s stream carried the request, even among plain calls', () => {
    const c = correlator({ onCall: 'streamed-task' });
    c.plainCallSent('plain-1');
    expect(c.taskOfRequest('elicitation/create', { onStreamOf: 'w-task' })).toBe('streamed-task');
  });

  it('routes a task’s messages to its unwrapped call when no tasks/result of it is open', () => {
    const c = correlator({ unwrapped: 'call-1' });
    expect(c.routeForTask('unwrapped')).toEqual({ relatedTo: 'call-1' });
  });
});

describe('ServedRequests', () => {
  function served() {
    const inbox = new Inbox<{ id: RequestId; message: object }>();
    const raws: string[] = [];
    const s = new ServedRequests(
      (id, message) => inbox.push({ id, message }),
      (id, raw) => {
        const text = typeof raw === 'string' ? raw : raw.join().toString();
        raws.push(text);
        inbox.push({ id, message: JSON.parse(text) as object });
      },
      logger,
    );
    return { s, answers: inbox.items, inbox, raws };
  }

  it('answers a blocking request with a result kept as bytes as those bytes, with only the envelope around them', async () => {
    const { s, inbox, raws } = served();
    const kept = '{ "content" :[{"type":"text","text":"é\\u0041"}] }';
    const pieces = [Buffer.from(kept.slice(0, 9)), Buffer.from(kept.slice(9))];
    s.answerBlocking(7, () => Promise.resolve({ resultBytes: new Pieces(pieces, Buffer.byteLength(kept)) }));
    s.answerBlocking('eight', () => Promise.resolve({ resultBytes: kept }));
    await inbox.waitFor((answer) => answer.id === 'eight', 'the answer to eight');
    expect(raws).toEqual([
      `{"jsonrpc":"2.0","id":7,"result":${kept}}`,
      `{"jsonrpc":"2.0","id":"eight","result":${kept}}`,
    ]);
  });

  it('answers with the result, or the JSON-RPC error the failure maps to', async () => {
    const { s, answers, inbox } = served();
    s.answer(1, () => Promise.resolve({ ok: true }));
    s.answer(2, () => Promise.reject(new ProtocolError(ErrorCode.InvalidParams, 'bad taskId')));
    await inbox.waitFor((answer) => answer.id === 1, 'the answer to 1');
    await inbox.waitFor((answer) => answer.id === 2, 'the answer to 2');
    expect(answers).toEqual([
      { id: 1, message: { jsonrpc: '2.0', id: 1, result: { ok: true } } },
      { id: 2, message: { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'bad taskId' } } },
    ]);
  });

  it('leaves a cancelled blocking request unanswered, and answers nothing to a peer gone', async () => {
    const { s, answers } = served();
    let release!: () => void;
    s.answerBlocking(
      1,
      (signal) =>
        new Promise((resolve) => (release = () => resolve({ result: { aborted: signal.aborted } }))),
    );
    expect(s.isBlocking(1)).toBe(true);
    expect(s.cancel(1)).toBe(true);
    release();
    await setImmediate();
    expect(answers).toEqual([]);
    expect(s.blockingCount).toBe(0);
    expect(s.cancel(1)).toBe(false);
    s.abandon();
    s.answer(2, () => Promise.resolve({}));
    s.answerBlocking(3, () => Promise.resolve({ result: {} }));
    await setImmediate();
    expect(answers).toEqual([]);
  });
});
