/**
 * The client end of a Session whose client takes values (session/value-client.ts), under the Session's
 * own RequestContexts as the Session wraps it: what reaches the edge, in what order, and each side's close.
 */
import { describe, expect, it } from 'vitest';
import { NO_CALLER } from '../../src/protocol/caller.js';
import { RequestContexts } from '../../src/session/request-contexts.js';
import { ValueClient } from '../../src/session/value-client.js';

/** A ValueClient under RequestContexts, with everything the edge hears in order. */
function edge() {
  const client = new ValueClient();
  const contexts = new RequestContexts(client, NO_CALLER);
  const heard: unknown[] = [];
  client.listen({
    message: (read) => heard.push(read.ok ? read.message.msg : 'unreadable'),
    closed: (reason) => heard.push(`closed: ${reason}`),
  });
  return { client, contexts, heard };
}

const status = { jsonrpc: '2.0', method: 'notifications/tasks/status', params: { taskId: 't' } };
const progress = {
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 'p', progress: 1 },
};

describe('ValueClient: the Session to an edge that takes values', () => {
  it('hands the edge what the Session sends in the order it was sent, answers to taken requests among them', async () => {
    const { contexts, heard } = edge();
    contexts.expect(7, { caller: NO_CALLER, answer: (response) => heard.push(response) });
    const answer = { jsonrpc: '2.0', id: 7, result: { task: { taskId: 't' } } };
    contexts.send(progress, { relatedTo: 7 });
    contexts.send(answer, { responseTo: 7 });
    // A task's first status goes after its CreateTaskResult: the edge must know the task when it hears it.
    contexts.sendRaw(JSON.stringify(status), undefined, status);
    await Promise.resolve();
    await Promise.resolve();
    expect(heard).toEqual([progress, answer, status]);
  });

  it('hands the value the Session gave, not a copy read from bytes; bytes without one are read once', async () => {
    const { contexts, heard } = edge();
    contexts.sendRaw(JSON.stringify(status), undefined, status);
    contexts.sendRaw(Buffer.from(JSON.stringify(progress)));
    await Promise.resolve();
    expect(heard[0]).toBe(status);
    expect(heard[1]).toEqual(progress);
  });

  it('keeps what the Session sent before the edge listened, and each side hears the other close', async () => {
    const client = new ValueClient();
    const sessionHeard: string[] = [];
    client.start({
      message: () => undefined,
      malformed: () => undefined,
      closed: ({ reason }) => sessionHeard.push(reason),
    });
    client.send(status);
    await Promise.resolve();
    const heard: unknown[] = [];
    client.listen({
      message: (read) => heard.push(read.ok ? read.message.msg : 'unreadable'),
      closed: (reason) => heard.push(`closed: ${reason}`),
    });
    expect(heard).toEqual([status]);
    await client.end();
    await Promise.resolve();
    expect(sessionHeard).toEqual(['the other end closed']);
    // Ended: nothing more reaches the edge, and the Session's own close is not reported back to it.
    client.send(progress);
    await client.close();
    await Promise.resolve();
    expect(heard).toEqual([status]);

    const { client: other, heard: otherHeard } = edge();
    other.send(progress);
    await other.close();
    await Promise.resolve();
    await Promise.resolve();
    expect(otherHeard).toEqual([progress, 'closed: the other end closed']);
  });
});
