/**
 * Issue 28 "Quotas per caller": the pools 2026-07-28 callers share on one bridge (open listens, calls
 * waiting for input, extension tasks) give each caller its share. In process: the pool alone, then the
 * real bridge, Session and SDK server with the default shares (100 of 1 000 per caller), where Bob's
 * requests come first and as many as the issue says.
 */
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { CallerShares } from '../../src/modern/caller-shares.js';
import { MODERN_LISTEN_SHARES, MODERN_PARKED_SHARES, modernTaskShares } from '../../src/modern/defaults.js';
import { ClientGiveUp } from '../../src/protocol/modern/exchange.js';
import { heldTool } from '../helpers/held-call.js';
import { Inbox } from '../helpers/inbox.js';
import { MODERN_META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';

describe('a pool shared by callers', () => {
  const pool = (evictOwn: boolean) => {
    const evicted: string[] = [];
    const shares = new CallerShares<string>({
      limits: { maxEntries: 4, maxEntriesPerCaller: 3, maxBytes: 100, maxBytesPerCaller: 60 },
      what: 'things',
      evictOwn,
      evicted: (entry) => evicted.push(entry),
    });
    return { shares, evicted };
  };

  it('refuses, or pushes out the caller’s own oldest, past its share; never another’s', () => {
    const refusing = pool(false);
    for (const n of [1, 2, 3]) expect(refusing.shares.add('bob', `bob-${n}`)).toBeUndefined();
    expect(refusing.shares.add('bob', 'bob-4')).toEqual({
      refused: 'the caller has its share of things (3, 60 bytes)',
    });
    expect(refusing.shares.add('alice', 'alice-1')).toBeUndefined();
    expect(refusing.evicted).toEqual([]);

    const evicting = pool(true);
    for (const n of [1, 2, 3, 4]) expect(evicting.shares.add('bob', `bob-${n}`)).toBeUndefined();
    expect(evicting.evicted).toEqual(['bob-1']);
    expect(evicting.shares.add('alice', 'alice-1')).toBeUndefined();
    expect(evicting.evicted).toEqual(['bob-1']);
  });

  it('a full pool makes room from the caller over its fair share, and refuses when all are within it', () => {
    const { shares, evicted } = pool(false);
    for (const n of [1, 2, 3]) shares.add('bob', `bob-${n}`);
    shares.add('alice', 'alice-1');
    // Full (4): Carol's fair share is 4/3; Bob holds 3.
    expect(shares.add('carol', 'carol-1')).toBeUndefined();
    expect(evicted).toEqual(['bob-1']);
    shares.add('dave', 'dave-1');
    expect(evicted).toEqual(['bob-1', 'bob-2']);
    // Four callers holding one each: a fifth is refused, nobody is pushed out.
    expect(shares.add('erin', 'erin-1')).toEqual({
      refused: 'all 4 things (100 bytes) are held by callers within their share',
    });
    expect(evicted).toEqual(['bob-1', 'bob-2']);
    expect(shares.size).toBe(4);
  });

  it('counts bytes: past the caller’s, or the pool’s, as past its count', () => {
    const { shares, evicted } = pool(true);
    expect(shares.add('bob', 'too-big', 61)).toEqual({
      refused: "it would keep 61 bytes, more than a caller's 60",
    });
    shares.add('bob', 'bob-1', 40);
    shares.add('bob', 'bob-2', 20);
    shares.add('alice', 'alice-1', 30);
    expect(evicted).toEqual([]);
    // Bob's 60 bytes are his share: his next pushes out his own oldest.
    shares.add('bob', 'bob-3', 10);
    expect(evicted).toEqual(['bob-1']);
    expect(shares.resize('alice-1', 61)).toBe(false);
    expect(shares.resize('alice-1', 50)).toBe(true);
    // Bob 30, Alice 50: 80 of 100. Carol's 30 come from Alice's (over 100/3), not Bob's (within it).
    expect(shares.add('carol', 'carol-1', 30)).toBeUndefined();
    expect(evicted).toEqual(['bob-1', 'alice-1']);
  });
});

interface Answer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

const answerOf = async (pending: Promise<unknown>): Promise<Answer> =>
  ((await pending) as { response: Answer }).response;

/** How each elicitation ended for the server, by the caller named in the call's arguments. */
let asked: Inbox<{ who: string; outcome: unknown }>;
const ask: FakeTool = {
  name: 'ask',
  run: async (args, extra) => {
    try {
      const answer = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { mode: 'form', message: 'name?', requestedSchema: { type: 'object', properties: {} } },
        },
        ElicitResultSchema,
      );
      asked.push({ who: String(args.who), outcome: answer });
      return textResult(`answered ${String(args.who)}`);
    } catch (error) {
      asked.push({ who: String(args.who), outcome: error });
      throw error;
    }
  },
};

const WITH_TASKS = {
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': {
    elicitation: { form: {} },
    extensions: { 'io.modelcontextprotocol/tasks': {} },
  },
};

let gate: InProcessBridge | undefined;
afterEach(async () => {
  await gate?.close();
  gate = undefined;
});

describe('the bridge’s pools, per caller', () => {
  it('Bob’s listens fill his share and are refused past it (-31001, the limit’s 2026-07-28 code); Alice still opens one', async () => {
    const g = (gate = await inProcessBridge([ask]));
    const streams: ClientGiveUp[] = [];
    const listen = (caller: string) => {
      const signal = new ClientGiveUp();
      streams.push(signal);
      const notified: object[] = [];
      const answer = g.ask(
        'subscriptions/listen',
        { notifications: {}, _meta: MODERN_META },
        {
          caller,
          signal,
          notified,
        },
      );
      return { answer, notified };
    };
    const bobs = Array.from({ length: MODERN_LISTEN_SHARES.maxEntries }, () => listen('bob'));
    const refused = await Promise.all(
      bobs.slice(MODERN_LISTEN_SHARES.maxEntriesPerCaller).map(({ answer }) => answerOf(answer)),
    );
    for (const answer of refused) {
      expect(answer.error).toMatchObject({
        code: -31001,
        message: expect.stringContaining('the caller has its share of open subscriptions (100'),
      });
    }
    const alice = listen('alice');
    await Promise.resolve();
    for (let turn = 0; alice.notified.length === 0 && turn < 500; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(alice.notified[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged' });
    // Bob's open streams are all still open: none was ended for Alice.
    for (const { notified } of bobs.slice(0, MODERN_LISTEN_SHARES.maxEntriesPerCaller)) {
      expect(notified).toHaveLength(1);
    }
    for (const stream of streams) stream.giveUp();
    expect(await alice.answer).toBeUndefined();
  });

  it('Bob’s 1 010 calls waiting for input push out only Bob’s own; Alice’s waits on, and her retry completes it', async () => {
    asked = new Inbox();
    const g = (gate = await inProcessBridge([ask]));
    const call = (who: string, extra: object = {}) =>
      answerOf(
        g.ask(
          'tools/call',
          { name: 'ask', arguments: { who }, _meta: MODERN_META, ...extra },
          { caller: who },
        ),
      );
    const alice = await call('alice');
    expect(alice.result).toMatchObject({ resultType: 'input_required' });
    const bobs = MODERN_PARKED_SHARES.maxEntries + 10;
    const bobFirst = await call('bob');
    for (let n = 1; n < bobs; n++) {
      expect((await call('bob')).result).toMatchObject({ resultType: 'input_required' });
    }
    // Bob's oldest were given up, each told to the server as the client gone (-32003); none of Alice's.
    const givenUp = bobs - MODERN_PARKED_SHARES.maxEntriesPerCaller;
    for (let n = 0; n < givenUp; n++) {
      const ended = await asked.waitFor(() => true, 'a given-up elicitation', 5_000);
      expect(ended.who).toBe('bob');
      expect(ended.outcome).toMatchObject({ code: -32003 });
    }
    const retry = (first: Answer) => ({
      requestState: first.result!.requestState,
      inputResponses: Object.fromEntries(
        Object.keys(first.result!.inputRequests as object).map((key) => [
          key,
          { action: 'accept', content: {} },
        ]),
      ),
    });
    const bobAgain = await call('bob', retry(bobFirst));
    expect(bobAgain.error).toMatchObject({
      code: -32602,
      message: expect.stringContaining('stopped waiting'),
    });
    const aliceAgain = await call('alice', retry(alice));
    expect(aliceAgain.result).toMatchObject({
      resultType: 'complete',
      content: [{ text: 'answered alice' }],
    });
  }, 60_000);

  it('Bob’s extension tasks past his share (a tenth of max-tasks) forget only his own oldest; Alice’s running task still takes the input its server asks for', async () => {
    const held = heldTool('held');
    const done: FakeTool = { name: 'done', run: () => Promise.resolve(textResult('done')) };
    const maxTasks = 20;
    const g = (gate = await inProcessBridge([held, done], { tasks: { maxTasks } }));
    expect(modernTaskShares(maxTasks).maxEntriesPerCaller).toBe(2);
    const task = async (caller: string, name: string) => {
      const { result } = await answerOf(
        g.ask('tools/call', { name, arguments: {}, _meta: WITH_TASKS }, { caller }),
      );
      expect(result).toMatchObject({ resultType: 'task' });
      return String(result!.taskId);
    };
    const poll = async (caller: string, taskId: string, status: string) => {
      let polled: Answer | undefined;
      for (let turn = 0; turn < 500 && polled?.result?.status !== status; turn++) {
        if (turn > 0) await new Promise((resolve) => setTimeout(resolve, 10));
        polled = await answerOf(g.ask('tasks/get', { taskId, _meta: WITH_TASKS }, { caller }));
      }
      expect(polled?.result).toMatchObject({ status });
      return polled!.result!;
    };
    const alices = await task('alice', 'held');
    const aliceCall = await held.calls.waitFor(() => true, 'Alice’s task’s call upstream');
    // The whole pool's worth of Bob's: a pool without shares would push Alice's (the oldest) out.
    let bobs: string | undefined;
    for (let n = 0; n < maxTasks; n++) bobs = await task('bob', 'done');
    await poll('bob', bobs!, 'completed');

    // Her server asks for input while hers is the only task running: the bridge holds it for her task.
    const answered = aliceCall.extra.sendRequest(
      {
        method: 'elicitation/create',
        params: { mode: 'form', message: 'name?', requestedSchema: { type: 'object', properties: {} } },
      },
      ElicitResultSchema,
    );
    const asking = await poll('alice', alices, 'input_required');
    const [key] = Object.keys(asking.inputRequests as object);
    await answerOf(
      g.ask(
        'tasks/update',
        { taskId: alices, inputResponses: { [key!]: { action: 'decline' } }, _meta: WITH_TASKS },
        { caller: 'alice' },
      ),
    );
    expect(await answered).toMatchObject({ action: 'decline' });
    aliceCall.answer(textResult('Alice’s own'));
    expect(await poll('alice', alices, 'completed')).toMatchObject({
      result: { content: [{ text: 'Alice’s own' }] },
    });
  }, 60_000);

  it('refuses to the server input for a caller’s task past the caller’s bytes (8 MiB); the task goes on', async () => {
    const held = heldTool('held');
    const g = (gate = await inProcessBridge([held]));
    const created = await answerOf(
      g.ask('tools/call', { name: 'held', arguments: {}, _meta: WITH_TASKS }, { caller: 'alice' }),
    );
    expect(created.result).toMatchObject({ resultType: 'task' });
    const taskId = String(created.result!.taskId);
    const upstream = await held.calls.waitFor(() => true, 'the task’s call upstream');
    const refusal = await upstream.extra
      .sendRequest(
        {
          method: 'elicitation/create',
          params: {
            mode: 'form',
            message: 'x'.repeat(modernTaskShares(10_000).maxBytesPerCaller),
            requestedSchema: { type: 'object', properties: {} },
          },
        },
        ElicitResultSchema,
      )
      .catch((error: unknown) => error);
    expect(refusal).toMatchObject({
      code: -32001,
      message: expect.stringContaining(
        'taskgate holds no more input for this caller’s tasks'.replace('’', "'"),
      ),
    });
    upstream.answer(textResult('done without it'));
    for (let turn = 0; turn < 500; turn++) {
      const { result } = await answerOf(
        g.ask('tasks/get', { taskId, _meta: WITH_TASKS }, { caller: 'alice' }),
      );
      if (result?.status === 'completed') {
        expect(result).toMatchObject({ result: { content: [{ text: 'done without it' }] } });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect.unreachable('the task never completed');
  }, 60_000);

  it('refuses a waiting call past the caller’s bytes (8 MiB), and one past the pool’s (32 MiB) when every holder is within its share; Alice’s small one waits on', async () => {
    asked = new Inbox();
    const MIB = 1024 * 1024;
    const big: FakeTool = {
      name: 'big',
      run: async (args, extra) => {
        try {
          const answer = await extra.sendRequest(
            {
              method: 'elicitation/create',
              params: {
                mode: 'form',
                message: 'x'.repeat(Number(args.bytes)),
                requestedSchema: { type: 'object', properties: {} },
              },
            },
            ElicitResultSchema,
          );
          asked.push({ who: String(args.who), outcome: answer });
          return textResult(`answered ${String(args.who)}`);
        } catch (error) {
          asked.push({ who: String(args.who), outcome: error });
          throw error;
        }
      },
    };
    const g = (gate = await inProcessBridge([big]));
    const call = (who: string, bytes: number, extra: object = {}) =>
      answerOf(
        g.ask(
          'tools/call',
          { name: 'big', arguments: { who, bytes }, _meta: MODERN_META, ...extra },
          { caller: who },
        ),
      );
    const alice = await call('alice', 10);
    expect(alice.result).toMatchObject({ resultType: 'input_required' });

    const bob = await call('bob', MODERN_PARKED_SHARES.maxBytesPerCaller);
    expect(bob.error).toMatchObject({
      code: -31001,
      message: expect.stringContaining('Too many calls waiting for input: it would keep '),
    });
    expect(bob.error!.message).toContain(`more than a caller's ${MODERN_PARKED_SHARES.maxBytesPerCaller}`);
    // Bob's server hears that its question was put to no client; its call is given up.
    expect(
      (await asked.waitFor((each) => each.who === 'bob', 'Bob’s question ended', 5_000)).outcome,
    ).toMatchObject({ code: -32003 });

    // Four callers keep 7 MiB each, within their share: a fifth's 7 MiB would pass the pool's 32 MiB.
    for (const who of ['carol', 'dave', 'erin', 'frank']) {
      expect((await call(who, 7 * MIB)).result).toMatchObject({ resultType: 'input_required' });
    }
    const grace = await call('grace', 7 * MIB);
    expect(grace.error).toMatchObject({
      code: -31001,
      message: expect.stringContaining(
        `all ${MODERN_PARKED_SHARES.maxEntries} calls waiting for input (${MODERN_PARKED_SHARES.maxBytes} bytes) are held by callers within their share`,
      ),
    });
    expect(
      (await asked.waitFor((each) => each.who === 'grace', 'Grace’s question ended', 5_000)).outcome,
    ).toMatchObject({ code: -32003 });
    expect(asked.items.map((each) => each.who).sort()).toEqual(['bob', 'grace']);

    const [key] = Object.keys(alice.result!.inputRequests as object);
    const aliceAgain = await call('alice', 10, {
      requestState: alice.result!.requestState,
      inputResponses: { [key!]: { action: 'accept', content: {} } },
    });
    expect(aliceAgain.result).toMatchObject({
      resultType: 'complete',
      content: [{ text: 'answered alice' }],
    });
  }, 60_000);
});
