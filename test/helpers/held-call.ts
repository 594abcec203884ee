/**
 * A tool of the in-process server whose calls wait until the test answers them, and that says when a call
 * has started and when taskgate cancelled it: the test decides when work ends, no timer does.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FakeTool, ToolExtra } from './in-process.js';
import { Inbox } from './inbox.js';

export interface HeldCall {
  args: Record<string, unknown>;
  extra: ToolExtra;
  answer(result: CallToolResult): void;
  fail(error: unknown): void;
  /** Settles once taskgate cancels the call (notifications/cancelled reached the server). */
  readonly cancelled: Promise<string>;
}

export interface HeldTool extends FakeTool {
  /** The calls as they start. */
  readonly calls: Inbox<HeldCall>;
  /** Answers every call still waiting (a test's end), so nothing is left pending. */
  releaseAll(): void;
}

export function heldTool(name: string, taskSupport?: FakeTool['taskSupport']): HeldTool {
  const calls = new Inbox<HeldCall>();
  const waiting = new Set<HeldCall>();
  return {
    name,
    ...(taskSupport === undefined ? {} : { taskSupport }),
    calls,
    releaseAll: () => {
      for (const call of waiting) call.answer({ content: [] });
    },
    run: (args, extra) =>
      new Promise<CallToolResult>((resolve, reject) => {
        const call: HeldCall = {
          args,
          extra,
          answer: (result) => {
            waiting.delete(call);
            resolve(result);
          },
          fail: (error) => {
            waiting.delete(call);
            reject(error);
          },
          cancelled: new Promise<string>((cancelled) =>
            extra.signal.addEventListener('abort', () => cancelled(String(extra.signal.reason))),
          ),
        };
        waiting.add(call);
        calls.push(call);
      }),
  };
}
