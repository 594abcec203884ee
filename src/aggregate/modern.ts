/**
 * 2026-07-28 clients in front of several servers: the modern bridge (src/modern/bridge.ts) is the 2025
 * client of the aggregator, as it is of a Session in front of one server. So `server/discover` is the
 * aggregator's merged initialize (the servers' capabilities as the union, taskgate's serverInfo, each
 * server's instructions under its name), the lists are the merged ones, a tool is decided by what its own
 * server's Session knows of it (Aggregator.toolFacts), and the bridge's tasks extension and MRTR rounds
 * work on the ids and requests the aggregator gives it, whichever server they come from. Nothing between
 * them is serialized: what the bridge hands its Session (requests, its handshake's end, cancellations,
 * answers) the aggregator takes as values (`take`, `takeMessage`), and what the aggregator sends its client
 * reaches the bridge as the values it made or read (session/value-client.ts), as a Session's does. The
 * Sessions behind it serve one caller each (the stdio client, or the one HTTP caller whose bridge this is),
 * who stands for them all.
 */
import { errorResponse, type Request } from '../protocol/messages.js';
import { decideToolCall, refusalOf, taskOf } from '../session/decide.js';
import type { RequestContext } from '../session/request-contexts.js';
import { toJsonRpcError } from '../tasks/wire-errors.js';
import { ALL_VERSIONS } from '../protocol/versions.js';
import type { Logger } from 'pino';
import { ModernBridge } from '../modern/bridge.js';
import type { ToolFacts } from '../modern/bridge-call.js';
import {
  MODERN_INPUT_WAIT_MS,
  MODERN_LISTEN_SHARES,
  MODERN_PARKED_SHARES,
  TASKGATE_INFO,
  modernTaskShares,
} from '../modern/defaults.js';
import type { SessionOptions } from '../session/session.js';
import type { ValueClient } from '../session/value-client.js';
import type { Aggregator } from './aggregator.js';

/**
 * A started bridge, the client of `aggregator`, which serves `client` (the bridge's end of it) and decides
 * its tool calls (toolFacts, toolsKnown). `given`: what a Session of this front is given (its id, the task
 * store, the audit log), for the bridge's own share of it.
 */
export function aggregatorBridge(
  aggregator: Pick<Aggregator, 'toolFacts' | 'toolsKnown' | 'take' | 'takeMessage'>,
  client: ValueClient,
  logger: Logger,
  given: Pick<SessionOptions, 'id' | 'store' | 'config' | 'audit'>,
): ModernBridge {
  const bridge = new ModernBridge({
    // Its answer comes back through `client`, where the bridge takes it as any answer of its Session's.
    session: {
      take: (request, context) => {
        const decided = decidedHere(request, context, (name) => aggregator.toolFacts(name));
        if (decided !== undefined) aggregator.take(decided);
      },
      takeMessage: (message) => aggregator.takeMessage(message),
      listen: (receiver) => client.listen(receiver),
      end: () => client.end(),
    },
    logger,
    supportedVersions: ALL_VERSIONS,
    replica: given.store.inputs?.self ?? given.id,
    inputWaitMs: MODERN_INPUT_WAIT_MS,
    parkedShares: MODERN_PARKED_SHARES,
    listenShares: MODERN_LISTEN_SHARES,
    clientInfo: TASKGATE_INFO,
    toolsKnown: () => aggregator.toolsKnown(),
    taskShares: modernTaskShares(given.config.tasks.maxTasks),
    ...(given.store.inputs === undefined ? {} : { taskInputs: given.store.inputs }),
    // Limits are each server's Session's to count (upstreams.<name>.limits), as for a 2025 client.
    defaultCaller: `aggregate:${given.id}`,
    ...(given.audit === undefined ? {} : { audit: { log: given.audit, session: given.id } }),
  });
  bridge.start();
  return bridge;
}

/**
 * A 2026-07-28 tools/call, decided here (decide.ts, the server deciding) by what the tool's own server's
 * Session knows of it, since the aggregator reads the bridge's requests as a 2025 client's: it goes on with
 * `task` where it is one, the call told the plan; a refusal is answered here (undefined: nothing goes on).
 * A tool the caller may not call goes on as it is, for the aggregator to refuse as unknown.
 */
function decidedHere(
  request: Request,
  context: RequestContext,
  facts: (name: string) => ToolFacts,
): Request | undefined {
  const name = request.params?.name;
  if (request.method !== 'tools/call' || context.canTakeTask === undefined || typeof name !== 'string') {
    return request;
  }
  if (context.caller.access?.mayCall(name) === false) return request;
  const plan = decideToolCall({
    taskDecidedBy: 'server',
    canTakeTask: context.canTakeTask,
    asksTask: false,
    ...facts(name),
  });
  context.decided?.(plan);
  if (plan.kind === 'refuse-plain' || plan.kind === 'refuse-task') {
    context.answer(errorResponse(request.id, toJsonRpcError(refusalOf(plan, name))));
    return undefined;
  }
  return taskOf(plan) === undefined ? request : { ...request, params: { ...request.params, task: {} } };
}
