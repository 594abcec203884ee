/**
 * Augment in one process (issue 13.2): a task whose call cannot be sent once the task exists. The store is
 * the real memory store; the host stands for the session, whose send to the upstream throws (as a
 * serializer, or a transport refusing a message, does): the one failure no process-level test can cause
 * once taskgate bounds what it parses.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { Policy } from '../../src/config/policy.js';
import type { JsonObject } from '../../src/protocol/messages.js';
import { Augmenter, type AugmentHost } from '../../src/tasks/augment.js';
import { MemoryTaskStore } from '../../src/tasks/memory-store.js';
import { thrownBy } from '../helpers/thrown.js';

const config = resolveConfig({});
const SESSION = 'session-1';
const stores: MemoryTaskStore[] = [];
afterEach(async () => Promise.all(stores.splice(0).map((store) => store.close())));

function augmenterOn(store: MemoryTaskStore, host: Partial<AugmentHost>): Augmenter {
  return new Augmenter(
    store,
    new Policy(config),
    config,
    {
      callUpstream: () => ({ wireId: 'never', done: new Promise(() => undefined) }),
      cancelUpstream: () => undefined,
      notifyClient: () => undefined,
      ...host,
    },
    { sessionId: SESSION },
    pino({ level: 'silent' }),
  );
}

const taskCall: JsonObject = { name: 'echo', arguments: { text: 'hi' }, task: {} };

describe('Augmenter', () => {
  it('issue 13.2: a call that cannot be sent fails its task, saying so, and frees its slots', async () => {
    const store = new MemoryTaskStore({ maxTasks: 5, maxResultBytes: 1_000_000 });
    stores.push(store);
    const unsendable = augmenterOn(store, {
      callUpstream: () => {
        throw new RangeError('Maximum call stack size exceeded');
      },
    });
    const liveLimit = { caller: SESSION, max: 1 };
    for (let i = 0; i < 5; i++) {
      expect(await thrownBy(unsendable.createTask(taskCall, liveLimit))).toBeInstanceOf(RangeError);
    }
    const { tasks } = await store.list(SESSION, undefined, 10);
    expect(tasks).toHaveLength(5);
    for (const task of tasks) {
      expect(task).toMatchObject({
        status: 'failed',
        statusMessage: 'Tool call could not be started; it never ran',
        outcome: { error: { code: -32603 } },
      });
      // tasks/result answers at once.
      expect((await store.waitForTerminal(task.taskId)).status).toBe('failed');
    }
    // Neither the store's slots (--max-tasks 5) nor the caller's live limit are held by them.
    const created = await augmenterOn(store, {}).createTask(taskCall, liveLimit);
    expect(created.task).toMatchObject({ status: 'working' });
  });
});
