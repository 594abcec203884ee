/**
 * Property-based fuzzing of taskgate's client edge over raw stdio pipes (fast-check). Batches of random
 * lines — valid requests, notifications and responses, broken envelopes, random JSON values, non-JSON
 * text, huge strings, deep nesting, odd ids — go to one real taskgate in front of the legacy fixture.
 *
 * Properties, per batch: taskgate keeps running; every request with a usable id gets exactly one
 * response; every malformed line gets exactly one -32700/-32600/-32602 error, addressed to its id when it
 * has a usable one and to null otherwise, except a line shaped like a response (no "method", a "result"
 * or an "error"), which JSON-RPC never answers, however malformed: its id is in taskgate's numbering, and
 * an answer would land on the client's own request of that id; stdout carries only JSON-RPC lines; stderr
 * shows no unhandled error. `tasks/result` is only sent for unknown tasks (a known one may legitimately block), except in the
 * second phase of a batch, for the tasks the batch created, which all end quickly.
 */
import { dirname } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_NESTING } from '../../src/protocol/frames.js';
import { nestingDepth, topLevelMembers } from '../../src/protocol/nesting.js';
import { RawPeer, TASKGATE } from '../helpers/taskgate.js';

type Id = string | number;
type Json = Record<string, unknown>;

/** What taskgate owes the client for one line. */
type Expect =
  | { kind: 'answer'; id: Id } // exactly one response (result or error) with this id
  | { kind: 'error'; id: Id | null; codes: number[] } // exactly one error response
  | { kind: 'none' } // a notification: nothing comes back
  | { kind: 'unanswered'; id: Id }; // a response from the client, well formed or not: nothing comes back

interface Line {
  text: string;
  expect: Expect;
  [fc.toStringMethod]?: () => string;
}
/** Keeps a counterexample readable: huge and deep lines are cut in fast-check's report. */
const line_ = (text: string, expected: Expect): Line => ({
  text,
  expect: expected,
  [fc.toStringMethod]: () =>
    JSON.stringify(text.length > 400 ? `${text.slice(0, 400)}… (${text.length} chars)` : text),
});
const answer = (id: Id): Expect => ({ kind: 'answer', id });
const error = (id: Id | null, codes: number[]): Expect => ({ kind: 'error', id, codes });
const NONE: Expect = { kind: 'none' };
const unanswered = (id: Id): Expect => ({ kind: 'unanswered', id });

const BATCHES = Number(process.env['FUZZ_BATCHES'] ?? 90);
const MIN_BATCH = 100;
const MAX_BATCH = 160;

/** taskgate in front of the legacy fixture; a request it makes (none is expected from these tools) is refused. */
async function startPeer(): Promise<RawPeer> {
  const peer = await RawPeer.initialized('legacy');
  peer.refuseRequests();
  return peer;
}

// ---------------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------------

let counter = 0;
/** Request ids are unique across the whole run, so that every response can be matched to one request. */
const uniqueId = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => `r${s}#${++counter}`),
  fc.constant(0).map(() => ++counter),
  fc.constant(0).map(() => -++counter),
  fc.constant(0).map(() => 2 ** 52 + ++counter),
);
// MCP ids are strings or integers: a fractional id is the subject of a test of its own, below.

/** Ids that are not valid JSON-RPC request ids. */
const unusableId = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 2 }),
  fc.array(fc.integer(), { maxLength: 3 }),
);
/** Targets for notifications/cancelled that can never be one of the ids above. */
const foreignId = fc.oneof(
  fc.string({ maxLength: 10 }).map((s) => `c${s}`),
  fc.double({ noInteger: true }),
  fc.constant(null),
  fc.object({ maxDepth: 1 }),
);

const hugeString = fc.integer({ min: 100_000, max: 1_500_000 }).map((n) => 'é'.repeat(n / 2));
const text = fc.oneof(
  { weight: 40, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 12, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  { weight: 1, arbitrary: hugeString },
);

function nested(depth: number, leaf: unknown, asArray: boolean): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = asArray ? [value] : { n: value };
  return value;
}
const deep = fc
  .tuple(fc.integer({ min: 10, max: 3000 }), fc.jsonValue({ maxDepth: 1 }), fc.boolean())
  .map(([depth, leaf, asArray]) => nested(depth, leaf, asArray));

const anyJson = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 2, arbitrary: fc.object({ maxDepth: 2 }) },
  { weight: 1, arbitrary: deep },
);
const randomParams = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 4 }),
  fc.record({ _meta: fc.dictionary(fc.string({ maxLength: 8 }), anyJson, { maxKeys: 3 }) }),
  fc.record({ nested: deep }),
);
/** `task` values: the right shape, or anything at all. */
const taskField = fc.oneof(
  fc.constant({}),
  fc.record(
    { ttl: fc.oneof(fc.integer({ min: 1, max: 600_000 }), fc.double(), fc.string()) },
    {
      requiredKeys: [],
    },
  ),
  anyJson,
);
const meta = fc.option(
  fc.record(
    {
      progressToken: fc.oneof(fc.string({ maxLength: 8 }), fc.integer()),
      extra: anyJson,
    },
    { requiredKeys: [] },
  ),
  { nil: undefined },
);

/** Arguments of the fixture's tools: bounded where a value could make the call long. */
const toolCall = fc.oneof(
  fc.record({ name: fc.constant('echo'), arguments: fc.record({ text }) }),
  fc.record({ name: fc.constant('echo'), arguments: fc.dictionary(fc.string(), anyJson) }),
  fc.record({
    name: fc.constant('sleep'),
    arguments: fc.record(
      { ms: fc.oneof(fc.integer({ min: 0, max: 50 }), fc.string()), label: fc.string() },
      { requiredKeys: ['ms'] },
    ),
  }),
  fc.record({
    name: fc.constant('progress'),
    arguments: fc.record({
      steps: fc.integer({ min: 0, max: 4 }),
      intervalMs: fc.integer({ min: 0, max: 5 }),
    }),
  }),
  fc.record({
    name: fc.constant('large'),
    arguments: fc.record({ bytes: fc.integer({ min: 0, max: 200_000 }) }),
  }),
  fc.record({ name: fc.constant('fail'), arguments: fc.record({ message: text }) }),
  fc.record({
    name: fc.constant('throw'),
    arguments: fc.record(
      { code: fc.oneof(fc.integer(), fc.double()), message: fc.string(), data: anyJson },
      { requiredKeys: ['message'] },
    ),
  }),
  fc.record({ name: fc.constant('cancelled-calls'), arguments: fc.constant({}) }),
  fc.record(
    { name: fc.string({ unit: 'grapheme', maxLength: 20 }), arguments: anyJson },
    { requiredKeys: [] },
  ),
  fc.record({ name: anyJson }),
);

const taskId = fc.oneof(
  { weight: 20, arbitrary: fc.uuid() },
  { weight: 20, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
  { weight: 1, arbitrary: hugeString },
);

/** A request (a method and params); the id is added later. */
const requestBody = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(toolCall, meta)
      .map(([params, _meta]) => ['tools/call', { ...params, ...(_meta && { _meta }) }] as const),
  },
  {
    weight: 6,
    arbitrary: fc
      .tuple(toolCall, taskField, meta)
      .map(([params, task, _meta]) => ['tools/call', { ...params, task, ...(_meta && { _meta }) }] as const),
  },
  { weight: 2, arbitrary: fc.record({ taskId }).map((p) => ['tasks/get', p] as const) },
  { weight: 2, arbitrary: randomParams.map((p) => ['tasks/get', p] as const) },
  // Unknown tasks only: tasks/result of a known, running task legitimately waits for it.
  {
    weight: 2,
    arbitrary: fc.record({ taskId: fc.oneof(taskId, anyJson) }).map((p) => ['tasks/result', p] as const),
  },
  {
    weight: 2,
    arbitrary: fc.record({ taskId: fc.oneof(taskId, anyJson) }).map((p) => ['tasks/cancel', p] as const),
  },
  {
    weight: 2,
    arbitrary: fc
      .record({ cursor: fc.oneof(fc.string(), anyJson) }, { requiredKeys: [] })
      .map((p) => ['tasks/list', p] as const),
  },
  { weight: 1, arbitrary: randomParams.map((p) => ['tasks/list', p] as const) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          'ping',
          'tools/list',
          'resources/list',
          'resources/read',
          'resources/templates/list',
          'prompts/list',
          'prompts/get',
          'completion/complete',
          'logging/setLevel',
          'initialize',
          'notifications/cancelled',
          'tasks/unknown',
        ),
        fc.option(randomParams, { nil: undefined }),
      )
      .map(([method, params]) => [method, params] as const),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.string({ unit: 'grapheme', maxLength: 30 }), fc.option(randomParams, { nil: undefined }))
      // notifications/cancelled as a request is harmless; any other "notifications/" name is fine too.
      .map(([method, params]) => [method, params] as const),
  },
);

const request: fc.Arbitrary<Line> = fc
  .tuple(uniqueId, requestBody, fc.boolean())
  .map(([id, [method, params], idFirst]) => {
    const body = params === undefined ? { method } : { method, params };
    const message = idFirst ? { jsonrpc: '2.0', id, ...body } : { ...body, jsonrpc: '2.0', id };
    return line_(JSON.stringify(message), answer(id));
  });

const notification: fc.Arbitrary<Line> = fc
  .oneof(
    fc.record({
      method: fc.constant('notifications/cancelled'),
      params: fc.record({ requestId: foreignId, reason: fc.string() }, { requiredKeys: [] }),
    }),
    fc.record({
      method: fc.constantFrom(
        'notifications/initialized',
        'notifications/progress',
        'notifications/roots/list_changed',
        'notifications/tasks/status',
        'notifications/message',
      ),
      params: randomParams,
    }),
    fc.record({ method: fc.string({ maxLength: 20 }), params: randomParams }, { requiredKeys: ['method'] }),
  )
  .map((body) => line_(JSON.stringify({ jsonrpc: '2.0', ...body }), NONE));

/**
 * A response from the client to a request taskgate never sent: dropped, never answered. Its id is unique
 * in the run, so that an answer to it cannot be taken for the answer to a request.
 */
const strayResponse: fc.Arbitrary<Line> = fc
  .tuple(
    uniqueId,
    fc.oneof(
      fc.record({ result: fc.object({ maxDepth: 2 }) }),
      fc.record({
        error: fc.record(
          { code: fc.integer(), message: fc.string(), data: anyJson },
          { requiredKeys: ['code', 'message'] },
        ),
      }),
    ),
  )
  .map(([id, body]) => line_(JSON.stringify({ jsonrpc: '2.0', id, ...body }), unanswered(id)));

/** Responses malformed in one way: never answered either (JSON-RPC answers only requests). */
const badResponse: fc.Arbitrary<Line> = fc
  .tuple(
    uniqueId,
    fc.oneof(
      fc.record({ result: fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.integer())) }),
      fc.record({
        error: fc.oneof(
          fc.string(),
          fc.constant(null),
          fc.record({ code: fc.string(), message: fc.integer() }),
          fc.record({ code: fc.double({ noInteger: true }), message: fc.string() }),
          fc.record({ message: fc.string() }),
        ),
      }),
      fc.record({
        result: fc.object({ maxDepth: 1 }),
        error: fc.record({ code: fc.integer(), message: fc.string() }),
      }),
    ),
    fc.constantFrom('2.0', '1.0', undefined),
  )
  .map(([id, body, jsonrpc]) => line_(JSON.stringify({ jsonrpc, id, ...body }), unanswered(id)));

const INVALID = [-32600, -32602];

/** Envelopes that are wrong in one way; the error goes to the id when it is usable. */
const badEnvelope: fc.Arbitrary<Line> = fc.oneof(
  // wrong or missing jsonrpc
  fc
    .tuple(
      uniqueId,
      fc.oneof(fc.constant(undefined), fc.constantFrom('1.0', '2', 2, 2.0, null, '2.0 ')),
      requestBody,
    )
    .map(([id, jsonrpc, [method, params]]) =>
      line_(JSON.stringify({ jsonrpc, id, method, params }), error(id, INVALID)),
    ),
  // an id that is not a string or a number
  fc
    .tuple(unusableId, requestBody)
    .map(([id, [method, params]]) =>
      line_(JSON.stringify({ jsonrpc: '2.0', id, method, params }), error(null, INVALID)),
    ),
  // a method that is not a string
  fc
    .tuple(uniqueId, fc.oneof(fc.integer(), fc.constant(null), fc.object({ maxDepth: 1 }), fc.boolean()))
    .map(([id, method]) => line_(JSON.stringify({ jsonrpc: '2.0', id, method }), error(id, INVALID))),
  // params that are not an object
  fc
    .tuple(
      uniqueId,
      fc.string({ maxLength: 20 }),
      fc.oneof(
        fc.string(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(anyJson, { maxLength: 3 }),
      ),
    )
    .map(([id, method, params]) =>
      line_(JSON.stringify({ jsonrpc: '2.0', id, method, params }), error(id, INVALID)),
    ),
  // an id and nothing else: no method, no result, no error
  uniqueId.map((id) => line_(JSON.stringify({ jsonrpc: '2.0', id }), error(id, INVALID))),
  // neither id nor method (nor a result or an error, which would make it a response)
  fc
    .dictionary(
      fc.string({ maxLength: 6 }).filter((k) => !['id', 'method', 'result', 'error'].includes(k)),
      anyJson,
      { maxKeys: 3 },
    )
    .map((body) => line_(JSON.stringify({ ...body, jsonrpc: '2.0' }), error(null, INVALID))),
  // JSON that is not an object at all (a batch, a string, a number, null...)
  fc
    .oneof(
      fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
      fc.array(fc.record({ jsonrpc: fc.constant('2.0'), id: uniqueId, method: fc.constant('ping') }), {
        minLength: 1,
        maxLength: 3,
      }),
      fc.string(),
      fc.double().filter(Number.isFinite),
      fc.boolean(),
      fc.constant(null),
    )
    .map((value) => line_(JSON.stringify(value), error(null, INVALID))),
);

/**
 * Nesting is judged before syntax: a line nested deeper than taskgate allows gets -32600 even when it is
 * not JSON, addressed to the id its top level shows (issue 13.1).
 */
function deeperThanAllowed(raw: string): Expect | undefined {
  const bytes = Buffer.from(raw);
  if (nestingDepth(bytes) <= MAX_NESTING) return undefined;
  const text = topLevelMembers(bytes).get('id');
  const id: unknown = text === undefined ? null : JSON.parse(text);
  return error(typeof id === 'string' || Number.isSafeInteger(id) ? (id as Id) : null, [-32600]);
}

/** Lines that are not JSON: garbage, truncated messages, JSON with a trailing comma. */
const notJson: fc.Arbitrary<Line> = fc
  .oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 80 }),
    request.map((line) => line.text.slice(0, Math.max(1, Math.floor(line.text.length / 2)))),
    request.map((line) => line.text.replace(/\}$/, ',}')),
    fc.constantFrom('{', '}', '[', 'undefined', 'NaN', "{'a':1}", '{"id":1,}', '\u0000', '\ufeff{}'),
  )
  .map((raw) => raw.replace(/[\r\n]/g, ' '))
  .filter((raw) => {
    if (raw.trim() === '') return false;
    try {
      JSON.parse(raw);
      return false;
    } catch {
      return true;
    }
  })
  .map((raw) => line_(raw, deeperThanAllowed(raw) ?? error(null, [-32700])));

const line: fc.Arbitrary<Line> = fc.oneof(
  { weight: 10, arbitrary: request },
  { weight: 3, arbitrary: notification },
  { weight: 1, arbitrary: strayResponse },
  { weight: 1, arbitrary: badResponse },
  { weight: 4, arbitrary: badEnvelope },
  { weight: 2, arbitrary: notJson },
);

// ---------------------------------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------------------------------

const keyOf = (id: unknown): string => `${typeof id}:${String(id)}`;
const isResponse = (m: Json): boolean => !('method' in m) && ('result' in m || 'error' in m);

let peer: RawPeer | undefined;
let cases = 0;
/** Lines shaped like a response, and the answers taskgate gave them (there must be none). */
let responseShaped = 0;
const answersToResponses: string[] = [];
afterAll(async () => {
  await peer?.stop();
});

async function runBatch(p: RawPeer, lines: Line[]): Promise<void> {
  const seenBefore = p.messages.items.length;
  const expected = new Map<string, Expect>();
  const responseIds = new Set<string>();
  let nullErrors = 0;
  for (const l of lines) {
    if (l.expect.kind === 'answer' || (l.expect.kind === 'error' && l.expect.id !== null)) {
      expected.set(keyOf(l.expect.id), l.expect);
    } else if (l.expect.kind === 'error') nullErrors++;
    else if (l.expect.kind === 'unanswered') responseIds.add(keyOf(l.expect.id));
  }
  responseShaped += responseIds.size;
  const fence = `fence#${++counter}`;
  const created: string[] = [];

  for (const l of lines) p.write(l.text);
  // Everything before the fence is read first; a ping through the upstream makes sure taskgate is alive.
  p.write(JSON.stringify({ jsonrpc: '2.0', id: fence, method: 'ping' }));

  const pending = new Set(expected.keys());
  await p.messages
    .waitFor(
      (m) => {
        if (isResponse(m)) pending.delete(keyOf(m.id));
        return pending.size === 0 && p.messages.items.some((x) => x.id === fence);
      },
      `every answer of the batch (and the fence)`,
      60_000,
    )
    .catch((error: Error) => {
      throw new Error(
        `${error.message}; still missing ${[...pending].slice(0, 10).join(', ')}; alive: ${p.alive}\nstderr tail: ${p.stderr.slice(-2000)}`,
      );
    });

  // Null-id errors cannot be matched one by one: count them (they may trail the fence by a little).
  const ours = (): Json[] => p.messages.items.slice(seenBefore).filter(isResponse);
  await p.messages
    .waitFor(() => ours().filter((m) => m.id === null).length >= nullErrors, 'the null-id errors', 5_000)
    .catch(() => undefined);

  const counts = new Map<string, number>();
  for (const m of ours()) {
    const key = keyOf(m.id);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const want = expected.get(key);
    if (responseIds.has(key)) {
      // Counted, not thrown at once: the run's total is the figure to report.
      answersToResponses.push(JSON.stringify(m).slice(0, 200));
      continue;
    }
    if (m.id === null) {
      expect(m, 'a null-id response is an error').toHaveProperty('error');
      expect([-32700, -32600, -32602]).toContain((m.error as Json).code);
    } else if (want?.kind === 'error') {
      expect(m, `the response to malformed ${key}`).toHaveProperty('error');
      expect(want.codes).toContain((m.error as Json).code);
    } else if (want === undefined && m.id !== fence) {
      throw new Error(`a response to an id never sent: ${JSON.stringify(m).slice(0, 300)}`);
    }
    const task = (m.result as { task?: { taskId?: unknown } } | undefined)?.task;
    if (typeof task?.taskId === 'string') created.push(task.taskId);
  }
  for (const key of expected.keys()) expect(counts.get(key) ?? 0, `responses to ${key}`).toBe(1);
  expect(counts.get(keyOf(null)) ?? 0, 'null-id errors').toBe(nullErrors);
  expect(p.badStdout, 'stdout lines that are not JSON-RPC').toEqual([]);

  // Phase two: every task the batch created ends, and tasks/result of each is answered once.
  const ids = created.map((taskId) => {
    const id = `result#${++counter}`;
    p.write(JSON.stringify({ jsonrpc: '2.0', id, method: 'tasks/result', params: { taskId } }));
    return id;
  });
  for (const id of ids) {
    await p.messages.waitFor((m) => m.id === id && isResponse(m), `tasks/result ${id}`, 30_000);
  }
  cases += lines.length + ids.length;
}

describe('fuzzing the client edge on stdio', () => {
  it(
    'never crashes, answers every request exactly once, and reports every malformed line',
    { timeout: 120_000 },
    async () => {
      const started = performance.now();
      await fc.assert(
        fc.asyncProperty(fc.array(line, { minLength: MIN_BATCH, maxLength: MAX_BATCH }), async (lines) => {
          if (peer === undefined || !peer.alive) peer = await startPeer();
          const p = peer;
          const t0 = performance.now();
          try {
            await runBatch(p, lines);
            if (process.env['FUZZ_DEBUG'])
              console.log(
                `batch of ${lines.length}: ${Math.round(performance.now() - t0)} ms, longest ${Math.max(...lines.map((l) => l.text.length))}`,
              );
          } finally {
            expect(p.alive, `taskgate is still running\n${p.stderr.slice(-2000)}`).toBe(true);
          }
        }),
        { numRuns: BATCHES, endOnFailure: true, interruptAfterTimeLimit: 100_000 },
      );
      const p = peer!;
      // The fixture prints its own errors and stacks (the SDK refusing a message) to the shared stderr,
      // sometimes into the middle of one of taskgate's long lines; only an unhandled error outside
      // them, or a stack frame in taskgate's own code, is taskgate's.
      const unhandled = p.stderr
        .split('\n')
        .filter((l) => /unhandled|uncaught/i.test(l) && !l.includes('[legacy-fixture]'))
        .map((l) => l.replace(/(.)\1{20,}/g, '$1…'));
      expect(unhandled, 'unhandled errors on stderr').toEqual([]);
      expect(p.stderr).not.toMatch(
        new RegExp(`^\\s+at .*${dirname(TASKGATE).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`, 'm'),
      );
      console.log(
        `fuzz: ${cases} cases in ${Math.round(performance.now() - started)} ms; ${answersToResponses.length} answers to ${responseShaped} response-shaped lines`,
      );
      expect(cases).toBeGreaterThanOrEqual(10_000);
      expect(answersToResponses.slice(0, 5), 'answers to lines shaped like a response').toEqual([]);
      expect(answersToResponses.length).toBe(0);
    },
  );
});

describe('request ids that are numbers but not integers', () => {
  // BUG (found by the fuzz run above): MCP's RequestId is a string or an *integer*. taskgate's envelope
  // check accepts any finite number (src/protocol/messages.ts isId), and forwards the request upstream
  // with the client's id unchanged. The SDK server behind it fails to parse the message (its RequestId
  // schema is `z.number().int()`), logs a ZodError and drops it, so the client never gets an answer.
  // Exact input, after initialize: {"jsonrpc":"2.0","id":9.25,"method":"ping"} (likewise for
  // tools/call, or for an integer beyond 2^53 such as 1e300). Expected: -32600 from taskgate, or an answer.
  it('answers a request whose id is 9.25, one way or the other', async () => {
    const p = await startPeer();
    try {
      p.write('{"jsonrpc":"2.0","id":9.25,"method":"ping"}');
      const answer = await p.messages.waitFor(
        (m) => m.id === 9.25 && isResponse(m),
        'the answer to id 9.25',
        5_000,
      );
      expect(answer).toBeDefined();
    } finally {
      await p.stop();
    }
  });
});
