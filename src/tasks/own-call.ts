/**
 * A request taskgate sends a peer itself, as the task services see it (running a task's tool call,
 * polling an upstream task, putting a client-side task's request to the client): the session places it
 * (src/session/own-calls.ts) and hands back its wire id and its answer.
 */
import type { RequestId, Response } from '../protocol/messages.js';
import type { Bytes } from '../protocol/pieces.js';
import type { Scanned } from '../protocol/scanned.js';

export interface Answer {
  response: Response;
  /** Size of the answer as received, for the store's byte budget. */
  bytes: number;
  /**
   * The answer's bytes as received, when it came as bytes (in the pieces it was read in, when it was): a task
   * keeps its result as them (result-bytes.ts).
   */
  raw?: Bytes;
  /** What the scan of `raw` found, when it was scanned: the result's bytes are kept without a second scan. */
  scanned?: Scanned;
}

export interface OwnCall {
  wireId: RequestId;
  /** The peer's answer, or undefined when the call was cancelled and no answer will come. */
  done: Promise<Answer | undefined>;
}
