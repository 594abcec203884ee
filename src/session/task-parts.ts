/**
 * The session's task parts, hooked to its peers: the augmenter (taskgate's own tasks, their calls run
 * upstream), the unwrapper (the upstream's tasks, followed for a client without tasks) and client-side
 * tasks (a server's task-augmented requests to a client without tasks).
 */
import { errorResponse, successResponse, type RequestId } from '../protocol/messages.js';
import { Augmenter } from '../tasks/augment.js';
import { ClientTasks } from '../tasks/client-tasks.js';
import { Unwrapper } from '../tasks/unwrap.js';
import type { Channel } from '../transport/channel.js';
import type { ClientPeer } from './client-peer.js';
import type { SessionOptions } from './session-options.js';
import type { StatusReads } from './status-reads.js';
import type { UpstreamOwnTasks } from './upstream-own-tasks.js';
import type { UpstreamPeer } from './upstream-peer.js';

export interface TaskPartsHooks {
  client: Channel;
  upstream: Channel;
  clientPeer: ClientPeer;
  upstreamPeer: UpstreamPeer;
  upstreamTasks: UpstreamOwnTasks;
  statusReads: StatusReads;
  /** Sends the answer to a client request. */
  respond(id: RequestId, message: object): void;
}

export interface TaskParts {
  augmenter: Augmenter;
  unwrapper: Unwrapper;
  clientTasks: ClientTasks;
}

export function taskParts(options: SessionOptions, hooks: TaskPartsHooks): TaskParts {
  const { client, upstream, clientPeer, upstreamPeer } = hooks;
  const callUpstream = upstreamPeer.call.bind(upstreamPeer);
  const cancelUpstream = upstreamPeer.cancelCall.bind(upstreamPeer);
  const unwrapper = new Unwrapper(
    {
      callUpstream,
      cancelUpstream,
      notifyClient: (method, params, relatedTo) =>
        client.send({ jsonrpc: '2.0', method, params }, { relatedTo }),
      answerClient: (id, outcome) =>
        hooks.respond(
          id,
          'error' in outcome ? errorResponse(id, outcome.error) : successResponse(id, outcome.result),
        ),
      tasks: hooks.upstreamTasks.unwrapped,
    },
    options.config,
    options.logger,
  );
  const clientTasks = new ClientTasks(
    options.store,
    options.policy,
    options.config,
    {
      callClient: (method, params) => clientPeer.call(method, params),
      cancelClient: (wireId, reason) => clientPeer.cancelCall(wireId, reason),
      // Nothing goes to a server that is down, nor to its successor, which never had these tasks.
      notifyUpstream: (method, params) => {
        if (!upstreamPeer.isAway) upstream.send({ jsonrpc: '2.0', method, params });
      },
    },
    options.id,
    options.logger,
  );
  const augmenter = new Augmenter(
    options.store,
    options.policy,
    options.config,
    {
      callUpstream,
      cancelUpstream,
      notifyClient: (method, params) => {
        if (method === 'notifications/tasks/status') hooks.statusReads.notified(params);
        client.send({ jsonrpc: '2.0', method, params });
      },
    },
    {
      sessionId: options.id,
      ...(options.identity === undefined ? {} : { identity: options.identity }),
      ...(options.subject === undefined ? {} : { subject: options.subject }),
      ...(options.taskOwner === undefined ? {} : { owner: options.taskOwner }),
    },
    options.logger,
    options.audit,
    options.runner,
  );
  return { augmenter, unwrapper, clientTasks };
}
