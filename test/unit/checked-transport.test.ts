import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { describe, expect, it } from 'vitest';
import { CheckedTransport } from '../helpers/checked-transport.js';

/** A checked client side whose peer answers each request with the given result. */
async function answering(result: unknown): Promise<CheckedTransport> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  serverSide.onmessage = (message) => {
    if ('method' in message && 'id' in message) {
      void serverSide.send({ jsonrpc: '2.0', id: message.id, result } as never);
    }
  };
  await serverSide.start();
  const checked = new CheckedTransport(clientSide);
  await checked.start();
  return checked;
}

describe('CheckedTransport checks responses against the result schema of their request', () => {
  it('flags a CreateTaskResult without a task', async () => {
    const checked = await answering({ content: [] });
    await checked.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', task: {} } });
    await checked.received.waitFor((message) => 'id' in message && message.id === 1, 'the answer');
    expect(checked.violations).toEqual([
      expect.stringMatching(/^the result of tools\/call as a task breaks/),
    ]);
  });

  it('passes the same result for a plain call, and a task listing that fits', async () => {
    const checked = await answering({ content: [], tasks: [] });
    await checked.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } });
    await checked.send({ jsonrpc: '2.0', id: 2, method: 'tasks/list' });
    await checked.received.waitFor((message) => 'id' in message && message.id === 2, 'the answers');
    expect(checked.violations).toEqual([]);
  });
});
