/**
 * The multiplexer of `upstream.sharing: shared` over memory channels: a raw server on one end, raw ports
 * (what each Session would see as its upstream) on the other.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/protocol/errors.js';
import type { Channel, CloseInfo } from '../../src/transport/channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';
import { SharedLevels } from '../../src/session/shared-levels.js';
import { SharedSubscriptions } from '../../src/session/shared-subscriptions.js';
import { SharedTasks } from '../../src/session/shared-tasks.js';
import { SharedUpstream } from '../../src/transport/shared-upstream.js';
import { Inbox } from '../helpers/inbox.js';

type Frame = Record<string, unknown> & { id?: unknown; method?: string; params?: Record<string, unknown> };

class Peer {
  readonly inbox = new Inbox<Frame>();
  readonly closes: CloseInfo[] = [];
  reopened = 0;

  constructor(readonly channel: Channel) {
    channel.start({
      message: (raw) => this.inbox.push(JSON.parse(raw.toString()) as Frame),
      malformed: () => undefined,
      closed: (info) => this.closes.push(info),
      reopened: () => void this.reopened++,
    });
  }

  send(frame: Frame): void {
    this.channel.send({ jsonrpc: '2.0', ...frame });
  }

  get items(): Frame[] {
    return this.inbox.items;
  }

  next(matches: (frame: Frame) => boolean, what: string): Promise<Frame> {
    return this.inbox.waitFor(matches, what, 2_000);
  }

  answerTo(id: unknown): Promise<Frame> {
    return this.next((frame) => frame.id === id && !('method' in frame), `the answer to ${String(id)}`);
  }
}

interface Setup {
  server: Peer;
  a: Peer;
  b: Peer;
  shared: SharedUpstream;
  tasks: SharedTasks;
  port: () => Peer;
}

/** The upstream end of a pair, as the translator in front of a 2026-07-28 server presents itself. */
function takingCallerCapabilities(channel: Channel): Channel {
  return {
    start: (handlers) => channel.start(handlers),
    send: (message, route) => channel.send(message, route),
    sendRaw: (raw, route) => channel.sendRaw(raw, route),
    close: () => channel.close(),
    takesCallerCapabilities: true,
  };
}

/** Sessions a and b, both past the handshake (answered once by the server). */
async function twoSessions(
  options: {
    modern?: boolean;
    capabilities?: { a: object; b: object };
    now?: () => number;
    /** Where the multiplexer's warnings go, one JSON line each. */
    warnings?: string[];
  } = {},
): Promise<Setup> {
  const { a: end, b: serverEnd } = memoryChannelPair();
  const upstream = options.modern === true ? takingCallerCapabilities(end) : end;
  const warnings = options.warnings;
  const logger =
    warnings === undefined
      ? pino({ level: 'silent' })
      : pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
  const tasks = new SharedTasks(options.now);
  const rules = { tasks, levels: new SharedLevels(), subscriptions: new SharedSubscriptions() };
  const shared = new SharedUpstream(upstream, logger, rules);
  const port = (): Peer => new Peer(shared.port());
  const a = port();
  const server = new Peer(serverEnd);
  const b = port();
  const capabilities = options.capabilities ?? { a: {}, b: {} };
  a.send({
    id: 0,
    method: 'initialize',
    params: { capabilities: capabilities.a, clientInfo: { name: 'a' } },
  });
  b.send({
    id: 0,
    method: 'initialize',
    params: { capabilities: capabilities.b, clientInfo: { name: 'b' } },
  });
  const init = await server.next((f) => f.method === 'initialize', 'initialize upstream');
  server.send({ id: init.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} } } });
  await Promise.all([a.answerTo(0), b.answerTo(0)]);
  a.send({ method: 'notifications/initialized' });
  b.send({ method: 'notifications/initialized' });
  return { server, a, b, shared, tasks, port };
}

/** a's task call (its id 1) answered by the server with task t-a: what ties the server's later requests to a. */
async function aHoldsTask(server: Peer, a: Peer): Promise<Frame> {
  a.send({ id: 1, method: 'tools/call', params: { name: 'x', task: {} } });
  const call = await server.next((f) => f.method === 'tools/call', "a's task call");
  server.send({ id: call.id, result: { task: { taskId: 't-a', status: 'working' } } });
  await a.answerTo(1);
  return call;
}

/** Something every port hears: once a port has it, whatever the server sent before has reached it. */
async function fence(server: Peer, ...peers: Peer[]): Promise<void> {
  server.send({ method: 'notifications/tools/list_changed', params: { fence: peers.length } });
  await Promise.all(
    peers.map((peer) => peer.next((f) => f.method === 'notifications/tools/list_changed', 'the fence')),
  );
}

/** The server's subscribes to resources, in order. */
const subscribes = (server: Peer): Frame[] => server.items.filter((f) => f.method === 'resources/subscribe');

/** The server's logging/setLevel requests, in order. */
const setLevels = (server: Peer): Frame[] => server.items.filter((f) => f.method === 'logging/setLevel');

/** What would let go of a subscription upstream: an unsubscribe, or a cancellation. */
const unsubscribesOrCancels = (server: Peer): Frame[] =>
  server.items.filter((f) => f.method === 'resources/unsubscribe' || f.method === 'notifications/cancelled');

/** How many resource updates a peer has heard. */
const updated = (peer: Peer): number =>
  peer.items.filter((f) => f.method === 'notifications/resources/updated').length;

/** The data of the log messages a peer has heard, in order. */
const data = (peer: Peer): unknown[] =>
  peer.items.filter((f) => f.method === 'notifications/message').map((f) => f.params?.data);

describe('SharedUpstream', () => {
  it('sends the first initialize upstream, answers the later ones from its result, and initialized once', async () => {
    const { server, a, b, port } = await twoSessions();
    const c = port();
    c.send({ id: 'c-init', method: 'initialize', params: { capabilities: {}, clientInfo: { name: 'c' } } });
    c.send({ method: 'notifications/initialized' });
    const answers = [await a.answerTo(0), await b.answerTo(0), await c.answerTo('c-init')];
    expect(answers.map((answer) => answer.result)).toEqual(Array(3).fill(answers[0]!.result));
    await fence(server, a, b, c);
    expect(server.items.filter((f) => f.method === 'initialize')).toHaveLength(1);
    expect(server.items.filter((f) => f.method === 'notifications/initialized')).toHaveLength(1);
  });

  it('gives the same request id and progress token from two ports their own answers and progress', async () => {
    const { server, a, b } = await twoSessions();
    for (const peer of [a, b]) {
      peer.send({ id: 1, method: 'tools/call', params: { name: 'x', _meta: { progressToken: 1 } } });
    }
    const calls = (): Frame[] => server.items.filter((f) => f.method === 'tools/call');
    await server.next(() => calls().length === 2, 'both calls');
    const [first, second] = calls() as [Frame, Frame];
    expect(first.id).not.toBe(second.id);
    const tokenOf = (f: Frame): unknown => (f.params!._meta as { progressToken: unknown }).progressToken;
    expect(tokenOf(first)).not.toBe(tokenOf(second));
    server.send({
      method: 'notifications/progress',
      params: { progressToken: tokenOf(second), progress: 2 },
    });
    server.send({ id: second.id, result: { content: [], which: 'second' } });
    server.send({ id: first.id, result: { content: [], which: 'first' } });
    const [answerA, answerB] = [await a.answerTo(1), await b.answerTo(1)];
    expect([answerA.result, answerB.result]).toEqual([
      { content: [], which: 'first' },
      { content: [], which: 'second' },
    ]);
    const progressOf = (peer: Peer): Frame[] =>
      peer.items.filter((f) => f.method === 'notifications/progress');
    expect(progressOf(a)).toEqual([]);
    expect(progressOf(b).map((f) => f.params)).toEqual([{ progressToken: 1, progress: 2 }]);
  });

  it("passes a port's cancellation upstream under the wire id, and cancels what a closing port had in flight", async () => {
    const { server, a, b } = await twoSessions();
    a.send({ id: 'x', method: 'tools/call', params: { name: 'slow' } });
    b.send({ id: 'x', method: 'tools/call', params: { name: 'slow' } });
    const calls = (): Frame[] => server.items.filter((f) => f.method === 'tools/call');
    await server.next(() => calls().length === 2, 'both calls');
    const [ofA, ofB] = calls();
    a.send({ method: 'notifications/cancelled', params: { requestId: 'x', reason: 'no longer needed' } });
    await server.next(
      (f) => f.method === 'notifications/cancelled' && f.params?.requestId === ofA!.id,
      "a's cancellation",
    );
    await b.channel.close();
    const cancelled = await server.next(
      (f) => f.method === 'notifications/cancelled' && f.params?.requestId === ofB!.id,
      "b's call cancelled as it closed",
    );
    expect(cancelled.params?.reason).toMatch(/closed/);
  });

  it('subscribes upstream once per URI, sends updates to its subscribers only, and unsubscribes with the last', async () => {
    const { server, a, b } = await twoSessions();
    a.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    const subscribe = await server.next((f) => f.method === 'resources/subscribe', 'the subscribe');
    server.send({ id: subscribe.id, result: {} });
    await a.answerTo(5);
    b.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    expect((await b.answerTo(5)).result).toEqual({});
    expect(server.items.filter((f) => f.method === 'resources/subscribe')).toHaveLength(1);
    server.send({ method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
    server.send({ method: 'notifications/resources/updated', params: { uri: 'file:///other' } });
    await fence(server, a, b);
    const updates = (peer: Peer): unknown[] =>
      peer.items.filter((f) => f.method === 'notifications/resources/updated').map((f) => f.params?.uri);
    expect([updates(a), updates(b)]).toEqual([['file:///x'], ['file:///x']]);

    a.send({ id: 6, method: 'resources/unsubscribe', params: { uri: 'file:///x' } });
    expect((await a.answerTo(6)).result).toEqual({});
    expect(server.items.filter((f) => f.method === 'resources/unsubscribe')).toHaveLength(0);
    server.send({ method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
    await fence(server, a, b);
    expect([updates(a), updates(b)]).toEqual([['file:///x'], ['file:///x', 'file:///x']]);
    await b.channel.close();
    const unsubscribe = await server.next(
      (f) => f.method === 'resources/unsubscribe',
      'the last unsubscribe',
    );
    expect(unsubscribe.params).toEqual({ uri: 'file:///x' });
  });

  it("answers a subscribe that joined one in flight with the server's answer to that one: a refusal reaches both, and the next goes upstream", async () => {
    const { server, a, b, port } = await twoSessions();
    a.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    const first = await server.next((f) => f.method === 'resources/subscribe', 'the subscribe');
    b.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    // b's subscribe has reached the multiplexer once b has the fence that follows it.
    b.send({ id: 'fence', method: 'ping' });
    const ping = await server.next((f) => f.method === 'ping', "b's ping");
    server.send({ id: ping.id, result: {} });
    await b.answerTo('fence');
    expect(b.items.some((f) => f.id === 5)).toBe(false);
    const refusal = { code: -32601, message: 'Method not found' };
    server.send({ id: first.id, error: refusal });
    expect((await a.answerTo(5)).error).toEqual(refusal);
    expect((await b.answerTo(5)).error).toEqual(refusal);
    // Nobody is subscribed: the next subscriber asks the server again.
    const c = port();
    c.send({ id: 'c-init', method: 'initialize', params: { capabilities: {}, clientInfo: { name: 'c' } } });
    await c.answerTo('c-init');
    c.send({ id: 9, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    await server.next(() => subscribes(server).length === 2, 'the subscribe asked again');
    server.send({ id: subscribes(server)[1]!.id, result: {} });
    expect((await c.answerTo(9)).result).toEqual({});
    server.send({ method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
    await fence(server, a, b, c);
    expect([updated(a), updated(b), updated(c)]).toEqual([0, 0, 1]);
  });

  it('settles a subscribe others wait on when the session that sent it closes without cancelling it', async () => {
    const { server, a, b } = await twoSessions();
    a.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    const first = await server.next((f) => f.method === 'resources/subscribe', 'the subscribe');
    b.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    await a.channel.close();
    server.send({ id: first.id, result: {} });
    expect((await b.answerTo(5)).result).toEqual({});
    server.send({ method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
    await fence(server, b);
    expect(b.items.filter((f) => f.method === 'notifications/resources/updated')).toHaveLength(1);
    // The server still holds the subscription b depends on: neither cancelled nor unsubscribed.
    expect(unsubscribesOrCancels(server)).toEqual([]);
  });

  it.each<[string, 'a' | 'b']>([
    [
      'settles a subscribe others wait on when the session that sent it cancels it, and leaves that one unsubscribed',
      'a',
    ],
    ["lets a session stop waiting for another's subscribe in flight without touching it upstream", 'b'],
  ])('%s', async (_title, cancels) => {
    const { server, a, b } = await twoSessions();
    const [canceller, other] = cancels === 'a' ? [a, b] : [b, a];
    a.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    const first = await server.next((f) => f.method === 'resources/subscribe', 'the subscribe');
    b.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    canceller.send({ method: 'notifications/cancelled', params: { requestId: 5, reason: 'timed out' } });
    server.send({ id: first.id, result: {} });
    expect((await other.answerTo(5)).result).toEqual({});
    server.send({ method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
    await fence(server, a, b);
    // The canceller's client saw its subscribe fail: it hears no updates, the other session does.
    expect([updated(canceller), updated(other)]).toEqual([0, 1]);
    expect(canceller.items.some((f) => f.id === 5)).toBe(false);
    // The subscription upstream is the other session's still: neither cancelled nor unsubscribed.
    expect(unsubscribesOrCancels(server)).toEqual([]);
  });

  it('lets a subscribe go once nobody waits on it: the next subscriber asks the server afresh, not one it may never answer', async () => {
    const { server, a, b } = await twoSessions();
    a.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    const first = await server.next((f) => f.method === 'resources/subscribe', 'the subscribe');
    b.send({ id: 5, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    // Both sessions time out: the server never answered.
    a.send({ method: 'notifications/cancelled', params: { requestId: 5, reason: 'timed out' } });
    b.send({ method: 'notifications/cancelled', params: { requestId: 5, reason: 'timed out' } });
    const cancelled = await server.next(
      (f) => f.method === 'notifications/cancelled',
      'the subscribe nobody waits on cancelled',
    );
    expect(cancelled.params?.requestId).toBe(first.id);
    a.send({ id: 6, method: 'resources/subscribe', params: { uri: 'file:///x' } });
    await server.next(() => subscribes(server).length === 2, 'a fresh subscribe');
    server.send({ id: subscribes(server)[1]!.id, result: {} });
    expect((await a.answerTo(6)).result).toEqual({});
    // The first one's late answer is moot.
    server.send({ id: first.id, result: {} });
    server.send({ method: 'notifications/resources/updated', params: { uri: 'file:///x' } });
    await fence(server, a, b);
    expect([updated(a), updated(b)]).toEqual([1, 0]);
    expect([a, b].map((peer) => peer.items.filter((f) => f.id === 5))).toEqual([[], []]);
  });

  it('keeps the upstream at the most verbose level asked and filters messages per port', async () => {
    const { server, a, b } = await twoSessions();
    // b never set a level: it hears everything, so the server must still send everything.
    a.send({ id: 7, method: 'logging/setLevel', params: { level: 'error' } });
    expect((await a.answerTo(7)).result).toEqual({});
    b.send({ id: 7, method: 'logging/setLevel', params: { level: 'warning' } });
    const second = await server.next(
      (f) => f.method === 'logging/setLevel' && f.params?.level === 'warning',
      'the most verbose level asked',
    );
    server.send({ id: second.id, result: {} });
    await b.answerTo(7);
    server.send({ method: 'notifications/message', params: { level: 'warning', data: 'w' } });
    server.send({ method: 'notifications/message', params: { level: 'critical', data: 'c' } });
    await fence(server, a, b);
    expect([data(a), data(b)]).toEqual([['c'], ['w', 'c']]);
    await b.channel.close();
    await server.next(
      (f) => f.method === 'logging/setLevel' && f.params?.level === 'error',
      'the level of the port that stays',
    );
    expect(setLevels(server)).toHaveLength(2);
  });

  it('keeps the level the server has, not the one it refused: a refused setLevel changes neither it nor the port', async () => {
    const warnings: string[] = [];
    const { server, a, b } = await twoSessions({ warnings });
    a.send({ id: 1, method: 'logging/setLevel', params: { level: 'error' } });
    await a.answerTo(1);
    b.send({ id: 1, method: 'logging/setLevel', params: { level: 'error' } });
    await server.next(() => setLevels(server).length === 1, 'the level error');
    server.send({ id: setLevels(server)[0]!.id, result: {} });
    await b.answerTo(1);
    b.send({ id: 2, method: 'logging/setLevel', params: { level: 'info' } });
    await server.next(() => setLevels(server).length === 2, 'the level info');
    const refusal = { code: -32603, message: 'the level cannot be changed now' };
    server.send({ id: setLevels(server)[1]!.id, error: refusal });
    expect((await b.answerTo(2)).error).toEqual(refusal);
    // Not retried: the operator is told the server may not send what the sessions need.
    expect(warnings.map((line) => (JSON.parse(line) as { logLevel: unknown }).logLevel)).toEqual(['info']);
    // The server is still at error: a's info must be asked of it, not answered as if it were at info.
    a.send({ id: 3, method: 'logging/setLevel', params: { level: 'info' } });
    await server.next(() => setLevels(server).length === 3, "a's level asked upstream");
    expect(setLevels(server)[2]!.params).toEqual({ level: 'info' });
    server.send({ id: setLevels(server)[2]!.id, result: {} });
    expect((await a.answerTo(3)).result).toEqual({});
    // b's own level is still the error it had, as on a server of its own that refused the change.
    server.send({ method: 'notifications/message', params: { level: 'warning', data: 'w' } });
    await fence(server, a, b);
    expect([data(a), data(b)]).toEqual([['w'], []]);
  });

  it('asks the server for a level it already has while another is in flight: the later one must win', async () => {
    const { server, a, b } = await twoSessions();
    // b still needs debug: a's error is answered here.
    a.send({ id: 1, method: 'logging/setLevel', params: { level: 'error' } });
    expect((await a.answerTo(1)).result).toEqual({});
    b.send({ id: 1, method: 'logging/setLevel', params: { level: 'error' } });
    await server.next(() => setLevels(server).length === 1, 'the level error');
    // The server still confirms debug, but error is on its way: a's debug must follow it upstream.
    a.send({ id: 2, method: 'logging/setLevel', params: { level: 'debug' } });
    await server.next(() => setLevels(server).length === 2, "a's debug asked after the error in flight");
    expect(setLevels(server).map((f) => f.params?.level)).toEqual(['error', 'debug']);
    server.send({ id: setLevels(server)[0]!.id, result: {} });
    server.send({ id: setLevels(server)[1]!.id, result: {} });
    expect((await b.answerTo(1)).result).toEqual({});
    expect((await a.answerTo(2)).result).toEqual({});
    // Both accepted in order: the server is at debug, and a hears a debug message.
    server.send({ method: 'notifications/message', params: { level: 'debug', data: 'd' } });
    await fence(server, a, b);
    expect([data(a), data(b)]).toEqual([['d'], []]);
    // And what the server has is known: a level it then has is answered here again.
    a.send({ id: 3, method: 'logging/setLevel', params: { level: 'debug' } });
    expect((await a.answerTo(3)).result).toEqual({});
    expect(setLevels(server)).toHaveLength(2);
  });

  it('asks the server again for the level a joining session needs while another level is in flight', async () => {
    const { server, a, b, port } = await twoSessions();
    a.send({ id: 1, method: 'logging/setLevel', params: { level: 'error' } });
    await a.answerTo(1);
    // b, which needed debug, leaves: the server is asked for error, a's level.
    await b.channel.close();
    await server.next(() => setLevels(server).length === 1, 'the level error');
    // c joins needing debug, the level the server last confirmed, while error is on its way.
    const c = port();
    await server.next(() => setLevels(server).length === 2, 'the level debug asked again for c');
    expect(setLevels(server).map((f) => f.params?.level)).toEqual(['error', 'debug']);
    server.send({ id: setLevels(server)[0]!.id, result: {} });
    server.send({ id: setLevels(server)[1]!.id, result: {} });
    server.send({ method: 'notifications/message', params: { level: 'debug', data: 'd' } });
    await fence(server, a, c);
    expect([data(a), data(c)]).toEqual([[], ['d']]);
  });

  it('refuses a log level that is none of the levels, with nothing sent upstream', async () => {
    const { server, a } = await twoSessions();
    a.send({ id: 1, method: 'logging/setLevel', params: { level: 'loud' } });
    const answer = await a.answerTo(1);
    expect(answer.error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/level must be one of debug/),
    });
    await fence(server, a);
    expect(server.items.filter((f) => f.method === 'logging/setLevel')).toEqual([]);
  });

  it("sends a log message on a session's request stream, or about its task, to that session only, at its level", async () => {
    const { server, a, b } = await twoSessions();
    await aHoldsTask(server, a);
    a.send({ id: 2, method: 'tools/call', params: { name: 'y' } });
    b.send({ id: 2, method: 'tools/call', params: { name: 'y' } });
    const calls = (): Frame[] => server.items.filter((f) => f.method === 'tools/call');
    await server.next(() => calls().length === 3, 'both plain calls');
    const [, ofA, ofB] = calls() as [Frame, Frame, Frame];
    b.send({ id: 3, method: 'logging/setLevel', params: { level: 'error' } });
    await b.answerTo(3);
    const log = (level: string, text: string, meta?: object): Frame => ({
      jsonrpc: '2.0',
      method: 'notifications/message',
      params: { level, data: text, ...(meta === undefined ? {} : { _meta: meta }) },
    });
    server.channel.send(log('info', "on a's stream"), { relatedTo: ofA.id as number });
    server.channel.send(log('info', "on b's stream, below its level"), { relatedTo: ofB.id as number });
    server.channel.send(log('error', "on b's stream"), { relatedTo: ofB.id as number });
    server.send(log('info', "about a's task", { 'io.modelcontextprotocol/related-task': { taskId: 't-a' } }));
    server.send(
      log('info', 'about a task nobody here has', {
        'io.modelcontextprotocol/related-task': { taskId: 't-unknown' },
      }),
    );
    // A stream of nobody's now: the request it carried was answered.
    server.send({ id: ofA.id, result: { content: [] } });
    await a.answerTo(2);
    server.channel.send(log('error', 'on a finished stream'), { relatedTo: ofA.id as number });
    // No evidence: each session at its own level, as from a server of its own.
    server.send(log('info', 'for all, info'));
    server.send(log('error', 'for all, error'));
    await fence(server, a, b);
    expect(data(a)).toEqual(["on a's stream", "about a's task", 'for all, info', 'for all, error']);
    expect(data(b)).toEqual(["on b's stream", 'for all, error']);
  });

  it('sends other notifications on a request stream to its session, and a list_changed to every session', async () => {
    const { server, a, b } = await twoSessions();
    a.send({ id: 1, method: 'tools/call', params: { name: 'x' } });
    const call = await server.next((f) => f.method === 'tools/call', "a's call");
    const onStream = { relatedTo: call.id as number };
    server.channel.send({ jsonrpc: '2.0', method: 'notifications/custom', params: { n: 1 } }, onStream);
    server.channel.send({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, onStream);
    server.send({ method: 'notifications/custom', params: { n: 2 } });
    await fence(server, a, b);
    const heard = (peer: Peer): unknown[] =>
      peer.items.filter((f) => f.method?.startsWith('notifications/')).map((f) => f.params?.n ?? f.method);
    const listChanged = 'notifications/tools/list_changed';
    expect(heard(a)).toEqual([1, listChanged, 2, listChanged]);
    expect(heard(b)).toEqual([listChanged, 2, listChanged]);
  });

  it("answers another session's native task exactly as an id never seen, and sends neither upstream", async () => {
    const { server, a, b } = await twoSessions();
    await aHoldsTask(server, a);
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      b.send({ id: `${method} of a's`, method, params: { taskId: 't-a' } });
      b.send({ id: `${method} unknown`, method, params: { taskId: 't-never' } });
      const others = (await b.answerTo(`${method} of a's`)).error as { code: number; message: string };
      const unknown = (await b.answerTo(`${method} unknown`)).error as { code: number; message: string };
      expect({ ...others, message: others.message.replace('t-a', '<id>') }).toEqual({
        ...unknown,
        message: unknown.message.replace('t-never', '<id>'),
      });
      expect(unknown).toEqual({ code: -32602, message: 'Task not found or expired: t-never' });
    }
    await fence(server, a, b);
    expect(server.items.filter((f) => f.method?.startsWith('tasks/'))).toEqual([]);
  });

  it("routes the server's requests by related task only, refuses one without evidence even with one port in flight, answers an untied ping", async () => {
    const { server, a, b } = await twoSessions();
    const call = await aHoldsTask(server, a);
    server.send({
      id: 'srv-1',
      method: 'elicitation/create',
      params: { message: '?', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't-a' } } },
    });
    await a.next((f) => f.id === 'srv-1', 'the elicitation of its task');
    a.send({ id: 'srv-1', result: { action: 'decline' } });
    await server.answerTo('srv-1');
    server.send({ method: 'notifications/tasks/status', params: { taskId: 't-a', status: 'completed' } });

    // b's is the only request in flight, but a is there too: the server may be asking on its own.
    b.send({ id: 2, method: 'tools/call', params: { name: 'y' } });
    const bCall = await server.next((f) => f.method === 'tools/call' && f !== call, "b's call");
    server.send({ id: 'srv-2', method: 'roots/list' });
    const unproven = await server.answerTo('srv-2');
    expect(unproven.error).toMatchObject({ code: ErrorCode.ClientUnavailable });
    expect((unproven.error as { message: string }).message).toMatch(
      /cannot tell which one roots\/list is for: .*serves several clients/,
    );

    a.send({ id: 3, method: 'tools/call', params: { name: 'z' } });
    await server.next(() => server.items.filter((f) => f.method === 'tools/call').length === 3, "a's call");
    server.send({ id: 'srv-3', method: 'sampling/createMessage', params: {} });
    const refused = await server.answerTo('srv-3');
    expect((refused.error as { message: string }).message).toMatch(/cannot tell which one/);
    server.send({ id: 'srv-4', method: 'ping' });
    expect((await server.answerTo('srv-4')).result).toEqual({});
    // No call is failed for it: b's goes on to its own answer.
    server.send({ id: bCall.id, result: { content: [{ type: 'text', text: 'b’s own' }] } });
    expect((await b.answerTo(2)).result).toEqual({ content: [{ type: 'text', text: 'b’s own' }] });
    await fence(server, a, b);
    expect(a.items.filter((f) => f.method === 'notifications/tasks/status')).toHaveLength(1);
    expect(b.items.filter((f) => f.method === 'notifications/tasks/status')).toHaveLength(0);
    expect([...a.items, ...b.items].some((f) => ['srv-2', 'srv-3', 'srv-4'].includes(f.id as string))).toBe(
      false,
    );
  });

  it("drops a session's answer to a server request put to another session: only the one asked settles it", async () => {
    const { server, a, b } = await twoSessions();
    await aHoldsTask(server, a);
    server.send({
      id: 1,
      method: 'elicitation/create',
      params: { message: '?', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't-a' } } },
    });
    await a.next((f) => f.id === 1 && f.method === 'elicitation/create', "the elicitation of a's task");
    // b guesses the server's small id and answers first; then a answers what it was asked.
    b.send({ id: 1, result: { action: 'accept', content: { from: 'b' } } });
    a.send({ id: 1, result: { action: 'decline' } });
    expect((await server.answerTo(1)).result).toEqual({ action: 'decline' });
    await fence(server, a, b);
    expect(server.items.filter((f) => f.id === 1 && !('method' in f))).toHaveLength(1);
  });

  it("sends a server serving one session alone that session's untagged requests, as a server of its own would", async () => {
    const { server, a, b } = await twoSessions();
    server.send({ id: 'srv-both', method: 'roots/list' });
    expect((await server.answerTo('srv-both')).error).toMatchObject({ code: ErrorCode.ClientUnavailable });
    await a.channel.close();
    // Idle or not, b is the only client the server serves now: its roots/list after initialize is b's.
    server.send({ id: 'srv-b', method: 'roots/list' });
    await b.next((f) => f.id === 'srv-b', 'the roots/list of the one session left');
    b.send({ id: 'srv-b', result: { roots: [] } });
    expect((await server.answerTo('srv-b')).result).toEqual({ roots: [] });
  });

  it("sends a URL elicitation's completion to the session asked, and one it cannot place to none", async () => {
    const { server, a, b } = await twoSessions();
    await aHoldsTask(server, a);
    server.send({
      id: 'srv-url',
      method: 'elicitation/create',
      params: {
        mode: 'url',
        elicitationId: 'e-a',
        url: 'https://example.test/consent',
        message: 'consent',
        _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't-a' } },
      },
    });
    await a.next((f) => f.id === 'srv-url', 'the URL elicitation');
    a.send({ id: 'srv-url', result: { action: 'accept' } });
    await server.answerTo('srv-url');
    server.send({ method: 'notifications/elicitation/complete', params: { elicitationId: 'e-a' } });
    server.send({ method: 'notifications/elicitation/complete', params: { elicitationId: 'e-unknown' } });
    await fence(server, a, b);
    const completions = (peer: Peer): unknown[] =>
      peer.items
        .filter((f) => f.method === 'notifications/elicitation/complete')
        .map((f) => f.params?.elicitationId);
    expect(completions(a)).toEqual(['e-a']);
    expect(completions(b)).toEqual([]);
  });

  it("keeps one session's native tasks out of another's tasks/get and tasks/list", async () => {
    const { server, a, b } = await twoSessions();
    const createTask = async (peer: Peer, taskId: string): Promise<void> => {
      const before = server.items.filter((f) => f.method === 'tools/call').length;
      peer.send({ id: `create-${taskId}`, method: 'tools/call', params: { name: 'x', task: {} } });
      await server.next(() => server.items.filter((f) => f.method === 'tools/call').length > before, 'call');
      const call = server.items.filter((f) => f.method === 'tools/call').at(-1)!;
      server.send({ id: call.id, result: { task: { taskId, status: 'working' } } });
      await peer.answerTo(`create-${taskId}`);
    };
    await createTask(a, 't-a');
    await createTask(b, 't-b');
    b.send({ id: 'peek', method: 'tasks/get', params: { taskId: 't-a' } });
    expect((await b.answerTo('peek')).error).toEqual({
      code: -32602,
      message: 'Task not found or expired: t-a',
    });
    expect(server.items.filter((f) => f.method === 'tasks/get')).toHaveLength(0);
    b.send({ id: 'list', method: 'tasks/list', params: {} });
    const list = await server.next((f) => f.method === 'tasks/list', 'the list upstream');
    const task = (taskId: string): Frame => ({ taskId, status: 'working' });
    server.send({ id: list.id, result: { tasks: [task('t-a'), task('t-b'), task('t-unknown')] } });
    expect((await b.answerTo('list')).result).toEqual({ tasks: [task('t-b')] });
  });

  it("keeps a native task's owner past its end until its ttl: its result still reaches it, another session still cannot read it", async () => {
    let now = 0;
    const { server, a, b, tasks } = await twoSessions({ now: () => now });
    a.send({ id: 1, method: 'tools/call', params: { name: 'x', task: { ttl: 60_000 } } });
    const call = await server.next((f) => f.method === 'tools/call', 'the task call');
    server.send({ id: call.id, result: { task: { taskId: 't-a', status: 'working', ttl: 60_000 } } });
    await a.answerTo(1);
    server.send({
      method: 'notifications/tasks/status',
      params: { taskId: 't-a', status: 'completed', ttl: 60_000 },
    });
    await a.next((f) => f.method === 'notifications/tasks/status', 'the task completed');
    now = 59_000;
    const tasksResults = (): Frame[] => server.items.filter((f) => f.method === 'tasks/result');
    for (const attempt of [1, 2]) {
      // A result can be fetched again until the ttl: each time it is a's, and b is told there is no such task.
      a.send({ id: `result-${attempt}`, method: 'tasks/result', params: { taskId: 't-a' } });
      await server.next(() => tasksResults().length === attempt, "a's tasks/result upstream");
      server.send({
        id: tasksResults()[attempt - 1]!.id,
        result: { content: [], _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't-a' } } },
      });
      expect((await a.answerTo(`result-${attempt}`)).result).toMatchObject({ content: [] });
      b.send({ id: `peek-${attempt}`, method: 'tasks/result', params: { taskId: 't-a' } });
      expect((await b.answerTo(`peek-${attempt}`)).error).toMatchObject({ code: -32602 });
    }
    expect(tasksResults()).toHaveLength(2);
    // Its ttl after it was last seen has passed: the server may have deleted it, and taskgate forgets it.
    // Then it is no session's, a's neither: its tasks/get is answered as an id never seen.
    now = 59_000 + 60_001;
    a.send({ id: 'late', method: 'tasks/get', params: { taskId: 't-a' } });
    expect((await a.answerTo('late')).error).toEqual({
      code: -32602,
      message: 'Task not found or expired: t-a',
    });
    expect(tasks.held).toBe(0);
    expect(server.items.filter((f) => f.method === 'tasks/get')).toEqual([]);
  });

  it("keeps a closed session's native task its own until its ttl: another session cannot read it, the server's requests about it go nowhere", async () => {
    let now = 0;
    const { server, a, b, tasks } = await twoSessions({ now: () => now });
    a.send({ id: 1, method: 'tools/call', params: { name: 'x', task: { ttl: 60_000 } } });
    const call = await server.next((f) => f.method === 'tools/call', 'the task call');
    server.send({ id: call.id, result: { task: { taskId: 't-a', status: 'completed', ttl: 60_000 } } });
    await a.answerTo(1);
    await a.channel.close();
    now = 30_000;
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      b.send({ id: method, method, params: { taskId: 't-a' } });
      expect((await b.answerTo(method)).error).toEqual({
        code: -32602,
        message: 'Task not found or expired: t-a',
      });
    }
    // b has a call in flight, the only one: still, a request about a's task is not b's, nor the closed a's.
    b.send({ id: 2, method: 'tools/call', params: { name: 'y' } });
    await server.next(() => server.items.filter((f) => f.method === 'tools/call').length === 2, "b's call");
    server.send({
      id: 'srv-1',
      method: 'elicitation/create',
      params: { message: '?', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 't-a' } } },
    });
    expect((await server.answerTo('srv-1')).error).toMatchObject({ code: ErrorCode.ClientUnavailable });
    await fence(server, b);
    expect(b.items.some((f) => f.id === 'srv-1')).toBe(false);
    expect(server.items.filter((f) => f.method?.startsWith('tasks/'))).toEqual([]);
    // Past its ttl the server may have deleted it: the tombstone is gone, and b is answered as before.
    now = 200_000;
    b.send({ id: 'late', method: 'tasks/get', params: { taskId: 't-a' } });
    expect((await b.answerTo('late')).error).toEqual({
      code: -32602,
      message: 'Task not found or expired: t-a',
    });
    expect(tasks.held).toBe(0);
  });

  it('holds as many native task owners as are within their ttl, not every task a session ever had', async () => {
    let now = 0;
    const { server, a, b, tasks } = await twoSessions({ now: () => now });
    const calls = (): Frame[] => server.items.filter((f) => f.method === 'tools/call');
    for (let i = 1; i <= 300; i++) {
      a.send({ id: i, method: 'tools/call', params: { name: 'x', task: { ttl: 1_000 } } });
      await server.next(() => calls().length === i, `task call ${i}`);
      server.send({
        id: calls()[i - 1]!.id,
        result: { task: { taskId: `t${i}`, status: 'completed', ttl: 1_000 } },
      });
      await a.answerTo(i);
      now += 100;
    }
    // Ten are within their ttl at any time. The first sweep comes when 64 are held (the floor) and
    // leaves the 10 unexpired, so the threshold stays 64: sweeps at tasks 64, 118, 172, 226 and 280
    // each leave 10, and tasks 281..300 add 20 more.
    expect(tasks.held).toBe(30);
    // Without a ttl a task is the session's for its life.
    a.send({ id: 'forever', method: 'tools/call', params: { name: 'x', task: {} } });
    await server.next(() => calls().length === 301, 'the task call without ttl');
    server.send({
      id: calls()[300]!.id,
      result: { task: { taskId: 't-forever', status: 'completed', ttl: null } },
    });
    await a.answerTo('forever');
    now += 1e12;
    a.send({ id: 'get', method: 'tasks/get', params: { taskId: 't-forever' } });
    await server.next((f) => f.method === 'tasks/get', 'its tasks/get');
    b.send({ id: 'peek', method: 'tasks/get', params: { taskId: 't-forever' } });
    expect((await b.answerTo('peek')).error).toMatchObject({ code: -32602 });
  });

  it('reads a message handed beside its bytes from the value, without parsing the bytes again', async () => {
    const { server, a } = await twoSessions();
    const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'handed' } };
    // Bytes that are not JSON: only the value handed beside them can have been read.
    a.channel.sendRaw('not json', undefined, call);
    const sent = await server.next((f) => f.method === 'tools/call', 'the call upstream');
    expect(sent.params).toEqual({ name: 'handed' });
  });

  it("stops routing a native task's progress once the task has ended", async () => {
    const { server, a } = await twoSessions();
    a.send({ id: 1, method: 'tools/call', params: { name: 'x', task: {}, _meta: { progressToken: 'p' } } });
    const call = await server.next((f) => f.method === 'tools/call', 'the call');
    const wireToken = (call.params!._meta as { progressToken: unknown }).progressToken;
    server.send({ id: call.id, result: { task: { taskId: 't1', status: 'working' } } });
    await a.answerTo(1);
    const progress = (n: number): Frame => ({
      method: 'notifications/progress',
      params: { progressToken: wireToken, progress: n },
    });
    server.send(progress(1));
    server.send({ method: 'notifications/tasks/status', params: { taskId: 't1', status: 'completed' } });
    server.send(progress(2));
    await fence(server, a);
    const heard = a.items.filter((f) => f.method === 'notifications/progress').map((f) => f.params);
    expect(heard).toEqual([{ progressToken: 'p', progress: 1 }]);
  });

  it('tells a 2026-07-28 upstream what each session can do, since it heard only the first initialize', async () => {
    const { server, a, b } = await twoSessions({
      modern: true,
      capabilities: { a: { elicitation: {} }, b: { sampling: {} } },
    });
    expect(server.items.filter((f) => f.method === 'initialize')).toHaveLength(1);
    a.send({ id: 1, method: 'tools/call', params: { name: 'x' } });
    b.send({ id: 1, method: 'tools/call', params: { name: 'x' } });
    const bridged = { 'taskgate/callerCapabilities': { roots: {} } };
    b.send({ id: 2, method: 'tools/call', params: { name: 'x', _meta: bridged } });
    await server.next(() => server.items.filter((f) => f.method === 'tools/call').length === 3, 'the calls');
    const declared = server.items
      .filter((f) => f.method === 'tools/call')
      .map((f) => (f.params!._meta as Record<string, unknown>)['taskgate/callerCapabilities']);
    expect(declared).toEqual([{ elicitation: {} }, { sampling: {} }, { roots: {} }]);
  });

  it('tells every port, and any port opened later, that the upstream is gone; their calls are moot', async () => {
    const { server, a, b, port } = await twoSessions();
    a.send({ id: 1, method: 'tools/call', params: { name: 'x' } });
    await server.next((f) => f.method === 'tools/call', 'the call');
    await server.channel.close();
    await expect.poll(() => [a.closes.length, b.closes.length]).toEqual([1, 1]);
    const late = port();
    await expect.poll(() => late.closes.length).toBe(1);
    expect(a.closes[0]!.reopening).toBeUndefined();
  });
});
