/**
 * The receiver side of tasks, as a task-aware client sees it, in process: the same scenarios against the
 * legacy fixture's server behind taskgate's Session (augment; its messages as stdio carries them, and as
 * Streamable HTTP does, each with its request's stream), the native fixture's server behind it (pass
 * through), and that native server on its own: a legacy server behind taskgate must be indistinguishable
 * from a native one. test/integration/task-scenarios.test.ts runs a few of them over each real topology.
 */
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createLegacyServer } from '../fixtures/legacy-fixture.js';
import { createNativeServer } from '../fixtures/native-fixture.js';
import { directConnection, inProcessGateway } from '../helpers/in-process.js';
import * as scenario from '../helpers/task-scenarios.js';

interface Opened extends scenario.ScenarioPeer {
  violations(): string[];
  close(): Promise<void>;
}

const throughTaskgate =
  (server: () => Server, upstreamStreams = false) =>
  async (): Promise<Opened> => {
    const gate = await inProcessGateway({ server: server(), upstreamStreams });
    return {
      client: gate.client,
      transport: gate.clientTransport,
      violations: () => gate.violations,
      close: () => gate.close(),
    };
  };

const targets: { name: string; augment: boolean; open: () => Promise<Opened> }[] = [
  {
    name: 'legacy server behind taskgate (augment)',
    augment: true,
    open: throughTaskgate(createLegacyServer),
  },
  {
    name: 'legacy server behind taskgate, its messages on their requests’ streams (augment)',
    augment: true,
    open: throughTaskgate(createLegacyServer, true),
  },
  {
    name: 'native server behind taskgate (pass through)',
    augment: false,
    open: throughTaskgate(createNativeServer),
  },
  {
    name: 'native server, direct (reference)',
    augment: false,
    open: async () => {
      const direct = await directConnection(createNativeServer());
      return { ...direct, violations: () => direct.transport.violations };
    },
  },
];

describe.each(targets)('$name', ({ name, augment, open }) => {
  let peer: Opened;
  afterEach(async () => {
    expect(peer.violations()).toEqual([]);
    await peer.close();
  });

  it('advertises tasks for tools/call, and cancel (spec: Capabilities)', async () => {
    scenario.advertisesTasks((peer = await open()));
  });

  it('marks tools with execution.taskSupport (spec: Tool-Level Negotiation)', async () => {
    await scenario.marksTools((peer = await open()));
  });

  it('answers a task-augmented call at once with a working task, then the exact result (spec: Creating Tasks, Result Retrieval)', async () => {
    await scenario.answersWithTaskThenResult((peer = await open()));
  });

  it('fails the task on an isError result and returns that result (spec: Task Execution Errors)', async () => {
    await scenario.failsOnIsError((peer = await open()), augment);
  });

  it('fails the task on a JSON-RPC error and returns that same error (spec: Task Execution Errors)', async () => {
    await scenario.failsOnRpcError((peer = await open()));
  });

  it('cancels: cancelled before the answer, stays cancelled, stops the call, refuses a second cancel (spec: Task Cancellation)', async () => {
    // The fixture's list of cancelled calls is this process's: a label of this target's own.
    await scenario.cancels((peer = await open()), `to-cancel ${name}`);
  });

  it('refuses get, result and cancel of an unknown task with -32602 (spec: Protocol Errors)', async () => {
    await scenario.refusesUnknownTask((peer = await open()));
  });

  it('delivers progress for the whole life of the task, tagged with the task (spec: Task Progress Notifications)', async () => {
    await scenario.deliversProgress((peer = await open()));
  });

  it('forwards an elicitation made during the task, tagged with the task, and resumes it (spec: Input Required Status)', async () => {
    await scenario.forwardsElicitation((peer = await open()));
  });

  it('passes plain calls, resources and prompts through untouched', async () => {
    await scenario.passesPlainThrough((peer = await open()));
  });
});
