/**
 * The receiver side of tasks over each real topology (stdio and HTTP on either side of taskgate, each
 * side its own process): a task's life, its progress, an elicitation and a cancellation as the pipes and
 * sockets carry them, one taskgate per topology. Every scenario, with the JSON-RPC and isError failures
 * and the unknown-task answers, runs in process against augment, pass through and the native server on
 * its own in test/unit/in-process-task-scenarios.test.ts (test/helpers/task-scenarios.ts holds both).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpFixture } from '../helpers/http-fixture.js';
import * as scenario from '../helpers/task-scenarios.js';
import { connect, type Connection, type ConnectOptions, type FixtureName } from '../helpers/taskgate.js';

interface Target {
  name: string;
  server: FixtureName;
  options: ConnectOptions;
  /** Run the fixture as a Streamable HTTP server and have taskgate reach it with --upstream-url. */
  upstreamOverHttp?: boolean;
}

const targets: Target[] = [
  { name: 'legacy server behind taskgate (augment)', server: 'legacy', options: {} },
  {
    name: 'legacy server behind taskgate over HTTP (HTTP→stdio, augment)',
    server: 'legacy',
    options: { front: 'http' },
  },
  {
    name: 'legacy server behind taskgate, reached over HTTP (stdio→HTTP, augment)',
    server: 'legacy',
    options: {},
    upstreamOverHttp: true,
  },
  {
    name: 'legacy server behind a taskgate sidecar (HTTP→HTTP, augment)',
    server: 'legacy',
    options: { front: 'http' },
    upstreamOverHttp: true,
  },
  { name: 'native server behind taskgate (pass through)', server: 'native', options: {} },
];

describe.each(targets)('$name', ({ name, server, options, upstreamOverHttp }) => {
  let connection: Connection;
  beforeAll(async () => {
    connection = await open();
  });
  afterAll(async () => {
    expect(connection.transport.violations).toEqual([]);
    await connection.close();
  });

  const open = async (): Promise<Connection> => {
    if (!upstreamOverHttp) return connect(server, options);
    const fixture = await startHttpFixture(server);
    const viaHttp = await connect(server, {
      ...options,
      upstream: [],
      flags: [...(options.flags ?? []), '--upstream-url', fixture.url],
    }).catch(async (error: unknown) => {
      await fixture.stop();
      throw error;
    });
    return {
      ...viaHttp,
      close: async () => {
        await viaHttp.close();
        await fixture.stop('SIGTERM');
      },
    };
  };

  it('advertises tasks for tools/call, and cancel (spec: Capabilities)', () => {
    scenario.advertisesTasks(connection);
  });

  it('answers a task-augmented call at once with a working task, then the exact result (spec: Creating Tasks, Result Retrieval)', async () => {
    await scenario.answersWithTaskThenResult(connection);
  });

  it('delivers progress for the whole life of the task, tagged with the task (spec: Task Progress Notifications)', async () => {
    await scenario.deliversProgress(connection);
  });

  it('forwards an elicitation made during the task, tagged with the task, and resumes it (spec: Input Required Status)', async () => {
    await scenario.forwardsElicitation(connection);
  });

  it('cancels: cancelled before the answer, stays cancelled, stops the call, refuses a second cancel (spec: Task Cancellation)', async () => {
    await scenario.cancels(connection, `to-cancel ${name}`);
  });
});
