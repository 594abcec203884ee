/**
 * Whom a server-to-client request is for (issue 28 "Attribution by evidence"), written once for every peer
 * that carries the requests of callers to an upstream: the 2026-07-28 bridge (modern/input-rounds.ts) and
 * the shared upstream (transport/shared-upstream.ts). A request belongs to one of them only by evidence,
 * strongest first:
 *
 * | evidence                                                  | goes to                                   |
 * | --------------------------------------------------------- | ----------------------------------------- |
 * | it names a task in its related-task `_meta` (or came on the stream of a task's call) | that task's owner |
 * | it came on the HTTP request stream of a request           | that request's owner                      |
 * | the upstream serves exactly one caller, and exactly one of its requests may ask now | that request |
 * | anything else (a task or stream of no one here, several callers, none or several requests) | nobody |
 *
 * Nobody: the server is refused (-32003, saying why) and no call of anyone is failed or given up because
 * of it. Within one caller, "the only request that may ask" picks among that caller's own requests: it
 * never crosses to another caller.
 */
import { ErrorCode, type JsonRpcErrorObject } from './errors.js';

/** What an SDK client answers a request it has no handler for (it did not declare the capability). */
export const AS_THE_CLIENT_REFUSES: JsonRpcErrorObject = {
  code: ErrorCode.MethodNotFound,
  message: 'Method not found',
};

/** The evidence there is for one server request. null: the evidence names something no longer here. */
export interface Evidence<O> {
  /** The owner of the task its related-task `_meta` names (or of the task whose call's stream carried it). */
  task?: O | null | undefined;
  /** It came on the HTTP stream of a request: that request's owner, if it may ask now. */
  stream?: O | null | undefined;
  /**
   * The requests that may ask now, when the upstream serves exactly one caller (a stdio connection, one
   * caller's bridge, a shared server with one session on it); undefined when it serves several.
   */
  oneCallers?: readonly O[] | undefined;
  /** What `oneCallers` are, for a refusal that names them ("1 call(s), 1 task(s)"). */
  counted?: string;
}

export type Attribution<O> = { to: O } | { nobody: string };

export function attribute<O>(method: string, evidence: Evidence<O>): Attribution<O> {
  const { task, stream, oneCallers, counted } = evidence;
  if (task !== undefined && task !== null) return { to: task };
  if (task === null) return { nobody: `${method} is about a task whose client is no longer here` };
  if (stream !== undefined && stream !== null) return { to: stream };
  if (stream === null) return { nobody: `${method} came for no open request` };
  if (oneCallers === undefined) {
    return {
      nobody: `${method} names no task and came on no request's stream, and the server serves several clients: it cannot be told whose it is`,
    };
  }
  if (oneCallers.length === 1) return { to: oneCallers[0]! };
  return {
    nobody:
      oneCallers.length === 0
        ? `${method} outside any request that may ask for input (a tools/call, prompts/get, resources/read or task)`
        : `${method} could belong to any of ${oneCallers.length} requests in flight${counted === undefined ? '' : ` (${counted})`}, and the server did not say which: it was put to no client`,
  };
}
