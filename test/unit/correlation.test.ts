import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RequestId } from '../../src/protocol/messages.js';
import {
  Correlation,
  ENDED_TOKENS_KEPT,
  Inbound,
  ProgressTokens,
  carriedCancellation,
  goneError,
} from '../../src/protocol/correlation.js';
import { ErrorCode } from '../../src/protocol/errors.js';
import { serialize, withExactRequestId } from '../../src/protocol/exact-ids.js';
import type { Message, Notification, Request, Response } from '../../src/protocol/messages.js';
import { readMessage } from '../../src/protocol/read-message.js';

interface Entry {
  name: string;
}
const entry = (name: string): Entry => ({ name });

/** The prefix of taskgate's own ids, learned from one of them ("taskgate-<hex>-<counter>"). */
function ownPrefix(pending: Correlation<Entry>): string {
  const sample = pending.own(entry('sample'));
  pending.take(sample);
  expect(sample).toMatch(/^taskgate-[0-9a-f]{8}-[0-9a-z]+$/);
  return String(sample).replace(/[0-9a-z]+$/, '');
}

describe('Correlation', () => {
  it.each<RequestId>([1, 0, -3, 2.5, 'abc', '', 'taskgate-x'])('forwards a free id %j unchanged', (id) => {
    const pending = new Correlation<Entry>();
    const a = entry('a');
    const wireId = pending.forward(id, a);
    expect(wireId).toBe(id);
    expect(pending.get(id)).toBe(a);
  });

  it('gives a fresh id to a forwarded request whose id is taken, and keeps the first one', () => {
    const pending = new Correlation<Entry>();
    const [first, second] = [entry('first'), entry('second')];
    pending.forward(7, first);
    const wireId = pending.forward(7, second);
    expect(wireId).not.toBe(7);
    expect(typeof wireId).toBe('string');
    expect(pending.get(7)).toBe(first);
    expect(pending.get(wireId)).toBe(second);
    expect(pending.size).toBe(2);
  });

  it('treats 1 and "1" as different ids', () => {
    const pending = new Correlation<Entry>();
    const [number, string] = [entry('number'), entry('string')];
    expect(pending.forward(1, number)).toBe(1);
    expect(pending.forward('1', string)).toBe('1');
    expect(pending.get(1)).toBe(number);
    expect(pending.get('1')).toBe(string);
    expect(pending.take(1)).toBe(number);
    expect(pending.get('1')).toBe(string);
    expect(pending.get(1)).toBeUndefined();
  });

  it('does not confuse a string id with the internal key of another', () => {
    const pending = new Correlation<Entry>();
    const [plain, prefixed] = [entry('plain'), entry('prefixed')];
    expect(pending.forward('x', plain)).toBe('x');
    expect(pending.forward('s:x', prefixed)).toBe('s:x');
    expect(pending.get('x')).toBe(plain);
    expect(pending.get('s:x')).toBe(prefixed);
  });

  it('mints distinct string ids for its own requests', () => {
    const pending = new Correlation<Entry>();
    const ids = Array.from({ length: 1_000 }, (_, i) => pending.own(entry(`own-${i}`)));
    for (const id of ids) expect(typeof id).toBe('string');
    expect(new Set(ids).size).toBe(1_000);
    expect(pending.size).toBe(1_000);
    expect(pending.get(ids[500]!)).toEqual(entry('own-500'));
  });

  it('uses a different prefix in each instance', () => {
    const a = new Correlation<Entry>().own(entry('a'));
    const b = new Correlation<Entry>().own(entry('b'));
    expect(a).not.toBe(b);
  });

  it('never mints an id that a peer has taken first, even one guessed on purpose', () => {
    const pending = new Correlation<Entry>();
    const prefix = ownPrefix(pending);
    const guesses = Array.from({ length: 20 }, (_, i) => `${prefix}${i.toString(36)}`);
    for (const guess of guesses) expect(pending.forward(guess, entry(`peer ${guess}`))).toBe(guess);
    const ours = Array.from({ length: 20 }, () => pending.own(entry('ours')));
    for (const id of ours) expect(guesses).not.toContain(id);
    for (const guess of guesses) expect(pending.get(guess)).toEqual(entry(`peer ${guess}`));
    expect(pending.size).toBe(40);
  });

  it('gives a fresh id to a forwarded request that reuses one of our pending ids', () => {
    const pending = new Correlation<Entry>();
    const mine = entry('mine');
    const ours = pending.own(mine);
    const theirs = entry('theirs');
    const wireId = pending.forward(ours, theirs);
    expect(wireId).not.toBe(ours);
    expect(pending.get(ours)).toBe(mine);
    expect(pending.get(wireId)).toBe(theirs);
  });

  it('get leaves the entry, take removes it and frees the id', () => {
    const pending = new Correlation<Entry>();
    const [a, b] = [entry('a'), entry('b')];
    pending.forward('req', a);
    expect(pending.get('req')).toBe(a);
    expect(pending.get('req')).toBe(a);
    expect(pending.take('req')).toBe(a);
    expect(pending.take('req')).toBeUndefined();
    expect(pending.get('req')).toBeUndefined();
    expect(pending.size).toBe(0);
    expect(pending.forward('req', b)).toBe('req');
  });

  it('take and get of an unknown id return undefined', () => {
    const pending = new Correlation<Entry>();
    pending.forward(1, entry('a'));
    expect(pending.get(2)).toBeUndefined();
    expect(pending.take('2')).toBeUndefined();
    expect(pending.size).toBe(1);
  });

  it('withdraw takes the request an origin sent under its id, the first of two sent with one id first', () => {
    const pending = new Correlation<Entry>();
    pending.forward(5, entry('first'));
    const renamed = pending.forward(5, entry('second'));
    expect(pending.withdraw(5)).toEqual([5, entry('first')]);
    expect(pending.withdraw(5)).toEqual([renamed, entry('second')]);
    expect(pending.withdraw(5)).toBeUndefined();
    expect(pending.size).toBe(0);
    expect(pending.indexed).toBe(0);
  });

  it('indexes no request that went as its own id, and still finds each by the id its origin gave', () => {
    const pending = new Correlation<Entry>();
    pending.forward(5, entry('own id'));
    pending.forward('x', entry('own id too'));
    expect(pending.indexed).toBe(0);
    expect(pending.wireIdOf('x')).toBe('x');
    expect(pending.withdraw(5)).toEqual([5, entry('own id')]);
  });

  it('withdraw finds a renumbered request before a later one that went as the same id', () => {
    const pending = new Correlation<Entry>({ mint: (n) => (n === 0 ? 7 : `minted-${n}`) });
    const own = pending.own(entry('ours'));
    const renumbered = pending.forward(7, entry('earlier'));
    pending.take(own);
    expect(pending.forward(7, entry('later'))).toBe(7);
    expect(pending.withdraw(7)).toEqual([renumbered, entry('earlier')]);
    expect(pending.withdraw(7)).toEqual([7, entry('later')]);
    expect([pending.size, pending.indexed]).toEqual([0, 0]);
  });

  it('takeWhere removes the matching entries and returns them with their wire ids, typed', () => {
    const pending = new Correlation<Entry>();
    pending.forward(7, entry('upstream'));
    pending.forward('7', entry('upstream'));
    const own = pending.own(entry('own'));
    expect(pending.takeWhere((e) => e.name === 'upstream')).toEqual([
      [7, entry('upstream')],
      ['7', entry('upstream')],
    ]);
    expect(pending.size).toBe(1);
    expect(pending.get(own)).toEqual(entry('own'));
    expect(pending.takeWhere((e) => e.name === 'upstream')).toEqual([]);
  });

  it('drain returns every pending entry and leaves none', () => {
    const pending = new Correlation<Entry>();
    const entries = [entry('a'), entry('b'), entry('c')];
    pending.forward(1, entries[0]!);
    pending.forward('1', entries[1]!);
    pending.own(entries[2]!);
    expect(pending.drain()).toEqual(entries);
    expect(pending.size).toBe(0);
    expect(pending.get(1)).toBeUndefined();
    expect(pending.drain()).toEqual([]);
  });
});

describe('Correlation with a deadline (issue 13.3)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  function withDeadline(afterMs: number) {
    const expired: [RequestId, string, number][] = [];
    const pending = new Correlation<Entry>({
      deadline: {
        afterMs,
        expired: (wireId, { name }, ms) => expired.push([wireId, name, ms]),
      },
    });
    return { pending, expired };
  }

  it('hands over an entry not answered in time, once, and forgets it', () => {
    vi.useFakeTimers();
    const { pending, expired } = withDeadline(1_000);
    pending.forward(7, entry('slow'));
    vi.advanceTimersByTime(999);
    expect(expired).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(expired).toEqual([[7, 'slow', 1_000]]);
    expect(pending.get(7)).toBeUndefined();
    vi.advanceTimersByTime(10_000);
    expect(expired).toHaveLength(1);
  });

  it('lets an entry go for good once it is taken, drained or taken by a match', () => {
    vi.useFakeTimers();
    const { pending, expired } = withDeadline(1_000);
    pending.forward(1, entry('answered'));
    pending.forward(2, entry('matched'));
    pending.forward(3, entry('drained'));
    pending.take(1);
    pending.takeWhere(({ name }) => name === 'matched');
    pending.drain();
    // A new entry under a freed id has its own deadline.
    pending.forward(1, entry('again'));
    vi.advanceTimersByTime(1_000);
    expect(expired).toEqual([[1, 'again', 1_000]]);
  });

  it('takes a deadline of its own for one entry, and holds one past the timer range', () => {
    vi.useFakeTimers();
    const { pending, expired } = withDeadline(1_000);
    const own = pending.own(entry('own'), 50);
    pending.forward('task', entry('task'), undefined, 30 * 86_400_000);
    vi.advanceTimersByTime(50);
    expect(expired).toEqual([[own, 'own', 50]]);
    vi.advanceTimersByTime(86_400_000);
    expect(pending.get('task')).toEqual(entry('task'));
  });
});

/** A message read from its bytes as taskgate reads any peer's. */
function read(text: string): Message['msg'] {
  const result = readMessage(Buffer.from(text), 'a test peer');
  if (!result.ok) throw new Error(`unreadable: ${text}`);
  return result.message.msg;
}

function readRequest(text: string): Request {
  const message = read(text);
  if (!('method' in message) || !('id' in message)) throw new Error(`not a request: ${text}`);
  return message as Request;
}

function readResponse(text: string): Response {
  const message = read(text);
  if ('method' in message) throw new Error(`not a response: ${text}`);
  return message;
}

/** A request an origin sent, as the entry of a table of many origins. */
interface Sent {
  method: string;
}

describe('the correlation engine (issue 28)', () => {
  it('numbers the requests of many origins on one connection apart, and gives each answer back under its own id', () => {
    const table = new Correlation<Sent, string>({ renumber: true, mint: (n) => n + 1 });
    const alice = readRequest('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"a"}}');
    const bob = readRequest('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"b"}}');
    const aliceWire = table.forward(alice.id, { method: alice.method }, 'alice');
    const bobWire = table.forward(bob.id, { method: bob.method }, 'bob');
    expect([aliceWire, bobWire]).toEqual([1, 2]);
    // The peer answers Bob's first.
    const answer = readResponse(`{"jsonrpc":"2.0","id":${bobWire},"result":{"content":[]}}`);
    expect(table.take(answer.id!)).toEqual({ method: 'tools/call' });
    expect(table.wireIdOf(7, 'alice')).toBe(aliceWire);
    expect(table.wireIdOf(7, 'bob')).toBeUndefined();
  });

  it('keeps a forwarded id that is free, so the request goes as its own bytes', () => {
    const table = new Correlation<Sent>();
    const request = readRequest('{"jsonrpc":"2.0","id":"req-1","method":"ping"}');
    expect(table.forward(request.id, { method: request.method })).toBe('req-1');
    expect(table.wireIdOf('req-1')).toBe('req-1');
  });

  it('maps progress tokens of two origins apart on the wire, and back to each one’s own token', () => {
    const table = new Correlation<Sent, string>({ renumber: true, mint: (n) => n + 1 });
    const progress = new ProgressTokens<string>();
    for (const origin of ['alice', 'bob']) {
      const request = readRequest(
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p"}}}',
      );
      const wireId = table.forward(request.id, { method: request.method }, origin);
      progress.open(`progress-${wireId}`, origin, 'p');
    }
    const fromPeer = read(
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"progress-2","progress":1}}',
    ) as Notification;
    expect(progress.ownerOf(fromPeer.params!.progressToken as string)).toEqual({ owner: 'bob', token: 'p' });
    progress.end('progress-2');
    expect(progress.ownerOf('progress-2')).toBeUndefined();
    expect(progress.isOver('progress-2')).toBe(true);
    expect(progress.isOver('progress-1')).toBe(false);
    // Ended by someone it is no longer the owner of: it stays.
    progress.end('progress-1', 'bob');
    expect(progress.ownerOf('progress-1')).toEqual({ owner: 'alice', token: 'p' });
    progress.dropOwner((owner) => owner === 'alice');
    expect(progress.size).toBe(0);
    expect(progress.isOver('progress-1')).toBe(false);
  });

  it('carries an origin’s cancellation to the peer under the wire id, and the late answer finds nothing', () => {
    const table = new Correlation<Sent, string>({ renumber: true, mint: (n) => n + 1 });
    table.forward('call-9', { method: 'tools/call' }, 'alice');
    const cancel = read(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-9","reason":"user"}}',
    ) as Notification;
    const withdrawn = table.withdraw(cancel.params!.requestId as RequestId, 'alice');
    expect(withdrawn).toEqual([1, { method: 'tools/call' }]);
    expect(JSON.stringify(carriedCancellation(cancel, withdrawn![0]))).toBe(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}}',
    );
    // A 2026-07-28 peer gets its own _meta on every message, in place of any the origin sent.
    expect(
      JSON.stringify(
        carriedCancellation({ ...cancel, params: { ...cancel.params, _meta: {} } }, 1, { v: 1 }),
      ),
    ).toBe(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user","_meta":{"v":1}}}',
    );
    expect(table.take(readResponse('{"jsonrpc":"2.0","id":1,"result":{}}').id!)).toBeUndefined();
    expect(table.withdraw('call-9', 'alice')).toBeUndefined();
  });

  it('carries the peer’s cancellation of its own request to the origin that has it, once', () => {
    const inbound = new Inbound<string>();
    const ask = readRequest('{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}');
    inbound.held(ask.id, 'bob');
    const cancel = read(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"srv-1"}}',
    ) as Notification;
    expect(inbound.cancelled(cancel.params!.requestId as RequestId)).toBe('bob');
    expect(inbound.cancelled('srv-1')).toBeUndefined();
    expect(inbound.answered('srv-1', 'bob')).toBe(false);
  });

  it('withdraws what a gone origin had, both ways, and settles all a gone peer owed with its error', () => {
    const table = new Correlation<Sent, string>({ renumber: true, mint: (n) => n + 1 });
    const inbound = new Inbound<string>();
    table.forward(1, { method: 'tools/call' }, 'alice');
    table.forward(1, { method: 'resources/read' }, 'bob');
    table.forward(2, { method: 'prompts/get' }, 'alice');
    inbound.held(40, 'alice');
    inbound.held(41, 'bob');
    expect(leave(table, 'alice')).toEqual([
      [1, { method: 'tools/call' }],
      [3, { method: 'prompts/get' }],
    ]);
    expect(inbound.takeOrigin('alice')).toEqual([40]);
    expect(goneError('client', 'The client session this request was sent to has closed')).toEqual({
      code: ErrorCode.ClientUnavailable,
      message: 'The client session this request was sent to has closed',
    });
    expect(table.size).toBe(1);
    expect(table.drain()).toEqual([{ method: 'resources/read' }]);
    expect(goneError('upstream', 'the server exited')).toEqual({
      code: ErrorCode.UpstreamUnavailable,
      message: 'Upstream server unavailable: the server exited',
    });
    expect([table.size, table.indexed, inbound.size]).toEqual([0, 0, 1]);
  });

  it('lets an origin stop waiting for a request that stays in flight, so neither its cancellation nor its going finds it', () => {
    const table = new Correlation<Sent, string>({ renumber: true, mint: (n) => n + 1 });
    table.forward(3, { method: 'resources/subscribe' }, 'alice');
    table.forward(4, { method: 'tools/call' }, 'alice');
    expect(table.wireIdsOf('alice')).toEqual([1, 2]);
    table.letGo(1);
    expect(table.wireIdsOf('alice')).toEqual([2]);
    expect(table.withdraw(3, 'alice')).toBeUndefined();
    expect(leave(table, 'alice')).toEqual([[2, { method: 'tools/call' }]]);
    expect(table.take(1)).toEqual({ method: 'resources/subscribe' });
    expect([table.size, table.indexed]).toEqual([0, 0]);
  });

  it('finds what a gone origin had when all that is left is a request sent again with an id in flight', () => {
    const table = new Correlation<Sent, string>({ renumber: true, mint: (n) => n + 1 });
    table.forward(5, { method: 'tools/call' }, 'alice');
    table.forward(5, { method: 'prompts/get' }, 'alice');
    expect(table.take(1)).toEqual({ method: 'tools/call' });
    expect(leave(table, 'alice')).toEqual([[2, { method: 'prompts/get' }]]);
    expect([table.size, table.indexed]).toEqual([0, 0]);
  });

  it('keeps an id beyond 2^53 exactly, out and back', () => {
    const table = new Correlation<Sent>();
    const request = readRequest('{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/list"}');
    const wireId = table.forward(request.id, { method: request.method });
    expect(serialize({ ...request, id: wireId })).toBe(
      '{"id":9007199254740993,"jsonrpc":"2.0","method":"tools/list"}',
    );
    // 9007199254740992 is what JSON.parse would have made of it: another request.
    expect(
      table.get(readResponse('{"jsonrpc":"2.0","id":9007199254740992,"result":{}}').id!),
    ).toBeUndefined();
    const cancelBytes = Buffer.from(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740993}}',
    );
    const cancel = withExactRequestId(read(cancelBytes.toString()) as Notification, cancelBytes);
    expect(table.wireIdOf(cancel.params!.requestId as RequestId)).toBe(wireId);
    expect(table.take(readResponse('{"jsonrpc":"2.0","id":9007199254740993,"result":{}}').id!)).toEqual({
      method: 'tools/list',
    });
  });

  it('holds nothing once many requests are settled, whichever way each ended', () => {
    const table = new Correlation<Sent, number>({
      renumber: true,
      mint: (n) => n,
      deadline: { expired: () => undefined },
    });
    const progress = new ProgressTokens<number>();
    for (let i = 0; i < 30_000; i++) {
      const origin = i % 7;
      const wireId = table.forward(i % 100, { method: 'tools/call' }, origin, 60_000);
      progress.open(`t-${String(wireId)}`, origin);
      if (i % 3 === 0) table.take(wireId);
      else if (i % 3 === 1) table.withdraw(i % 100, origin);
      else leave(table, origin);
      progress.end(`t-${String(wireId)}`);
    }
    expect([table.size, table.indexed, progress.size]).toEqual([0, 0, 0]);
    expect(progress.isOver('t-' + String(table.own({ method: 'x' })))).toBe(false);
    expect(ENDED_TOKENS_KEPT).toBe(1024);
    expect(endedCount(progress)).toBe(ENDED_TOKENS_KEPT);
    // Its deadline timer lingers a second after the table empties; the project's files share a worker.
    table.drain();
  });
});

/** An origin goes: what it had in flight, taken out as the shared upstream does (wireIdsOf, then take). */
function leave<Origin>(table: Correlation<Sent, Origin>, origin: Origin): [RequestId, Sent][] {
  return table.wireIdsOf(origin).map((wireId) => [wireId, table.take(wireId)!]);
}

/** How many ended tokens are remembered, counted from outside. */
function endedCount(progress: ProgressTokens<number>): number {
  let count = 0;
  for (let i = 0; i < 30_000; i++) if (progress.isOver(`t-${i}`)) count++;
  return count;
}
