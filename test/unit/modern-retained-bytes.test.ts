/**
 * Issue 28 "What is kept, is kept too long", in process: what the bridge keeps of a 2026-07-28 request
 * once the client has its answer. A call waiting for the client's input (MRTR) keeps what its retry is
 * checked against (a digest) and what the server may ask it for (the input capabilities it declared); a
 * finished extension task keeps its creator and those capabilities, not the request. Each request carries
 * 1 MB in its declared capabilities (`experimental`), which no upstream is sent: whatever of it stays in
 * the heap after a full collection is the bridge's.
 */
import { randomBytes } from 'node:crypto';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { JsonObject } from '../../src/protocol/messages.js';
import { collectGarbage } from '../helpers/gc.js';
import { MODERN_META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';

const REQUESTS = 150;
const MB = 1024 * 1024;

interface Answer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

/** Each request's own 1 MB (a fresh string per request, so none is shared between them). */
const paddedMeta = (_n: number, extensions: boolean): JsonObject => ({
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': {
    elicitation: { form: {} },
    // Parsed, as a front reads a request body (a string made otherwise may live outside the heap).
    experimental: JSON.parse(`{"padding":"${randomBytes(MB / 2).toString('hex')}"}`) as JsonObject,
    ...(extensions ? { extensions: { 'io.modelcontextprotocol/tasks': {} } } : {}),
  },
});

const tools: FakeTool[] = [
  { name: 'quick', run: () => textResult('done') },
  {
    name: 'ask',
    // The server waits for the answer for as long as the test runs: the call stays parked.
    run: async (_args, extra) => {
      await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { mode: 'form', message: 'name?', requestedSchema: { type: 'object', properties: {} } },
        },
        ElicitResultSchema,
      );
      return textResult('answered');
    },
  },
];

let gate: InProcessBridge | undefined;
afterEach(async () => {
  await gate?.close();
  gate = undefined;
});

const answerOf = async (pending: Promise<unknown>): Promise<Answer> =>
  ((await pending) as { response: Answer }).response;

/** Heap bytes still held after `work`, each after a full collection. */
async function retainedBy(work: (g: InProcessBridge) => Promise<void>): Promise<number> {
  const g = (gate = await inProcessBridge(tools));
  // The bridge's initialize and the tools' first list, done before the baseline.
  await answerOf(g.ask('tools/call', { name: 'quick', arguments: {}, _meta: MODERN_META }));
  await collectGarbage();
  const before = process.memoryUsage().heapUsed;
  await work(g);
  await collectGarbage();
  return process.memoryUsage().heapUsed - before;
}

/**
 * 1.2× what plain calls keep, plus the state each kept request has of its own (a few KiB: its call open
 * upstream, its requestState's key, its task's record): far below the 1 MB each would keep whole.
 */
const OWN_STATE_BYTES = 16 * 1024;
const bound = (plain: number): number => 1.2 * Math.max(plain, 0) + REQUESTS * OWN_STATE_BYTES;
const figures = (plain: number, kept: number): string =>
  `retained ${(kept / MB).toFixed(1)} MB against ${(plain / MB).toFixed(1)} MB for plain calls`;

const plainCalls = async (g: InProcessBridge): Promise<void> => {
  for (let n = 0; n < REQUESTS; n++) {
    const answer = await answerOf(
      g.ask('tools/call', { name: 'quick', arguments: {}, _meta: paddedMeta(n, false) }),
    );
    expect(answer.result).toMatchObject({ resultType: 'complete' });
  }
};

describe(`what the bridge keeps of ${REQUESTS} requests of 1 MB`, () => {
  it('calls waiting for input keep within 1.2× of what plain calls keep', async () => {
    const plain = await retainedBy(plainCalls);
    await gate!.close();
    const waiting = await retainedBy(async (g) => {
      for (let n = 0; n < REQUESTS; n++) {
        const answer = await answerOf(
          g.ask('tools/call', { name: 'ask', arguments: {}, _meta: paddedMeta(n, false) }),
        );
        expect(answer.result).toMatchObject({ resultType: 'input_required' });
      }
    });
    expect(waiting, figures(plain, waiting)).toBeLessThan(bound(plain));
  });

  it('finished extension tasks keep within 1.2× of what plain calls keep', async () => {
    const plain = await retainedBy(plainCalls);
    await gate!.close();
    const tasks = await retainedBy(async (g) => {
      for (let n = 0; n < REQUESTS; n++) {
        const created = await answerOf(
          g.ask('tools/call', { name: 'quick', arguments: {}, _meta: paddedMeta(n, true) }),
        );
        expect(created.result).toMatchObject({ resultType: 'task' });
        const taskId = String(created.result!.taskId);
        for (let poll = 0; ; poll++) {
          const got = await answerOf(g.ask('tasks/get', { taskId, _meta: paddedMeta(n, true) }));
          if (got.result?.status === 'completed') break;
          expect(poll).toBeLessThan(200);
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    });
    expect(tasks, figures(plain, tasks)).toBeLessThan(bound(plain));
  });
});
