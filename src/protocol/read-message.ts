/**
 * One message from the bytes of one frame, with its id exact (see exact-ids.ts), or why it is not one:
 * the error, and as much of the value as was read, so that a refusal can still carry the request's id.
 */
import { withExactId } from './exact-ids.js';
import { TooDeepError, parseFrame } from './frames.js';
import { classify, type Message } from './messages.js';

export type ReadMessage = { ok: true; message: Message } | { ok: false; error: unknown; value: unknown };

/**
 * The message a peer in memory handed beside its bytes (Channel.sendRaw's `parsed`: exact ids already, and
 * read once by its sender), or, when none was handed, the bytes read.
 */
export function readHanded(raw: Buffer, parsed: object | undefined, from: string): ReadMessage {
  if (parsed === undefined) return readMessage(raw, from);
  try {
    return { ok: true, message: classify(parsed) };
  } catch (error) {
    return { ok: false, error, value: parsed };
  }
}

export function readMessage(raw: Buffer, from: string): ReadMessage {
  let value: unknown;
  try {
    value = withExactId(parseFrame(raw, from), raw);
    return { ok: true, message: classify(value) };
  } catch (error) {
    return { ok: false, error, value: error instanceof TooDeepError ? withExactId(error.value, raw) : value };
  }
}
