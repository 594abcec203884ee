/**
 * Which request a server-to-client request belongs to (issue 28 "Attribution by evidence"), for the
 * bridge that carries the requests of many callers on one upstream: by the HTTP stream it came on, by its
 * related-task tag, or, with neither, by there being exactly one request in flight that could have asked
 * (calls that may ask for input and running tasks together, whoever's). Anything else belongs to nobody:
 * it is refused to the server, and no call of anyone is failed or given up because of it.
 */
import { ErrorCode, type JsonRpcErrorObject } from '../protocol/errors.js';
import type { Request } from '../protocol/messages.js';
import type { Arrival } from '../transport/channel.js';

/** What an SDK client answers a request it has no handler for (it did not declare the capability). */
export const AS_THE_CLIENT_REFUSES: JsonRpcErrorObject = {
  code: ErrorCode.MethodNotFound,
  message: 'Method not found',
};

export type Attribution<C, T> = { call: C } | { task: T } | { nobody: string };

export interface InFlight<C, T> {
  /** The call whose Session request the stream carried, if it is one. */
  callOnStream(streamOf: number): C | undefined;
  /** The task the stream or the related-task tag names. */
  taskOf(request: Request, arrival: Arrival | undefined): T | undefined;
  /** Calls open now that may ask for input (not waiting for an answer they already asked for). */
  calls: readonly C[];
  /** Tasks whose call runs. */
  tasks: readonly T[];
}

export function attribute<C, T>(
  request: Request,
  arrival: Arrival | undefined,
  inFlight: InFlight<C, T>,
): Attribution<C, T> {
  const task = inFlight.taskOf(request, arrival);
  if (task !== undefined) return { task };
  const streamOf = arrival?.onStreamOf;
  if (typeof streamOf === 'number') {
    const call = inFlight.callOnStream(streamOf);
    return call === undefined ? { nobody: `${request.method} came for no open request` } : { call };
  }
  const { calls, tasks } = inFlight;
  const open = calls.length + tasks.length;
  if (open === 1) return calls.length === 1 ? { call: calls[0]! } : { task: tasks[0]! };
  return {
    nobody:
      open === 0
        ? `${request.method} outside any request: a 2026-07-28 client can only be asked for input while its tools/call, prompts/get, resources/read or task is open`
        : `${request.method} could belong to any of ${open} requests in flight (${calls.length} call(s), ${tasks.length} task(s)), and the server did not say which: it was put to no client`,
  };
}
