/**
 * Issue 28 "Input crosses callers", in process: 2026-07-28 callers share the bridge's one upstream, where a
 * 2025 stdio server says nothing of whose request it asks for. A server-to-client request goes to a caller
 * only by evidence (attribution.ts); without it, it is refused to the server with a clear error, and no
 * one's call is failed or handed another's question.
 */
import { ElicitResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { heldTool, type HeldTool } from '../helpers/held-call.js';
import { Inbox } from '../helpers/inbox.js';
import { MODERN_META, inProcessBridge, type InProcessBridge } from '../helpers/in-process-bridge.js';
import { textResult, type FakeTool } from '../helpers/in-process.js';

interface Answer {
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
}

const WITH_TASKS = {
  ...MODERN_META,
  'io.modelcontextprotocol/clientCapabilities': {
    elicitation: { form: {} },
    extensions: { 'io.modelcontextprotocol/tasks': {} },
  },
};

/** How each elicitation the `ask` tool sent ended, for the server. */
let asked: Inbox<unknown>;
const ask: FakeTool = {
  name: 'ask',
  run: async (_args, extra) => {
    try {
      const answer = await extra.sendRequest(
        {
          method: 'elicitation/create',
          params: { mode: 'form', message: 'name?', requestedSchema: { type: 'object', properties: {} } },
        },
        ElicitResultSchema,
      );
      asked.push(answer);
      return textResult('answered');
    } catch (error) {
      asked.push(error);
      throw error;
    }
  },
};

let held: HeldTool;
let gate: InProcessBridge | undefined;
afterEach(async () => {
  held.releaseAll();
  expect(gate?.serverViolations() ?? []).toEqual([]);
  await gate?.close();
  gate = undefined;
});

const open = async (): Promise<InProcessBridge> => {
  asked = new Inbox();
  held = heldTool('held');
  return (gate = await inProcessBridge([held, ask]));
};

const answerOf = async (pending: Promise<unknown>): Promise<Answer> =>
  ((await pending) as { response: Answer }).response;

const refusalOf = async (): Promise<McpError> => {
  const outcome = await asked.waitFor(() => true, "the server's elicitation to end", 5_000);
  expect(outcome).toBeInstanceOf(McpError);
  return outcome as McpError;
};

describe('a server request goes to a caller by evidence only', () => {
  it('Bob’s task asks while Alice’s plain call is open: refused to the server as ambiguous; Alice’s call ends with its own result', async () => {
    const g = await open();
    const alice = answerOf(g.ask('tools/call', { name: 'held', arguments: {}, _meta: MODERN_META }));
    const aliceCall = await held.calls.waitFor(() => true, "Alice's call upstream");
    const bob = await answerOf(g.ask('tools/call', { name: 'ask', arguments: {}, _meta: WITH_TASKS }));
    expect(bob.result).toMatchObject({ resultType: 'task' });

    const refused = await refusalOf();
    expect(refused.message).toContain('could belong to any of 2 requests in flight (1 call(s), 1 task(s))');
    aliceCall.answer(textResult('alice’s own'));
    const answered = await alice;
    expect(answered.result).toMatchObject({ resultType: 'complete', content: [{ text: 'alice’s own' }] });
    expect(answered.result).not.toHaveProperty('inputRequests');
  });

  it('Alice’s task asks while Bob’s task runs: refused as ambiguous between the two, not as "outside any request"', async () => {
    const g = await open();
    const bob = await answerOf(g.ask('tools/call', { name: 'held', arguments: {}, _meta: WITH_TASKS }));
    expect(bob.result).toMatchObject({ resultType: 'task' });
    await held.calls.waitFor(() => true, "Bob's task's call upstream");
    const alice = await answerOf(g.ask('tools/call', { name: 'ask', arguments: {}, _meta: WITH_TASKS }));
    expect(alice.result).toMatchObject({ resultType: 'task' });

    const refused = await refusalOf();
    expect(refused.message).toContain('could belong to any of 2 requests in flight (0 call(s), 2 task(s))');
    expect(refused.message).not.toContain('outside any request');
  });
});
