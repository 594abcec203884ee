/** MemoryChannel beyond the Channel contract (channel-contract.test.ts): the parsed value handed beside the bytes. */
import { describe, expect, it } from 'vitest';
import type { Arrival, ChannelHandlers } from '../../src/transport/channel.js';
import { memoryChannelPair } from '../../src/transport/memory-channel.js';

interface Heard {
  raw: string;
  arrival: Arrival | undefined;
  parsed: object | undefined;
}

function listener(heard: Heard[]): ChannelHandlers {
  return {
    message: (raw, arrival, parsed) => heard.push({ raw: raw.toString(), arrival, parsed }),
    malformed: () => undefined,
    closed: () => undefined,
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('MemoryChannel, a parsed value beside the bytes', () => {
  it('arrives as that very object, not a copy, whether the receiver started before or after', async () => {
    const { a, b } = memoryChannelPair();
    const early = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo' } };
    const late = { jsonrpc: '2.0', id: 2, result: {} };
    a.sendRaw(JSON.stringify(early), undefined, early);
    await tick();
    const heard: Heard[] = [];
    b.start(listener(heard));
    a.sendRaw(JSON.stringify(late), { responseTo: 2 }, late);
    await tick();
    expect(heard.map((each) => each.parsed)).toEqual([early, late]);
    expect(heard[0]!.parsed).toBe(early);
    expect(heard[1]!.parsed).toBe(late);
    expect(heard[1]!.arrival).toEqual({ onStreamOf: 2 });
    expect(heard.map((each) => JSON.parse(each.raw) as unknown)).toEqual([early, late]);
  });

  it('is absent when the sender gave none: send() hands only bytes, since its sender may keep changing the object', async () => {
    const { a, b } = memoryChannelPair();
    const heard: Heard[] = [];
    b.start(listener(heard));
    const task = { jsonrpc: '2.0', method: 'notifications/tasks/status', params: { status: 'working' } };
    a.send(task);
    a.sendRaw('{"jsonrpc":"2.0","method":"notifications/initialized"}');
    task.params.status = 'completed';
    await tick();
    expect(heard.map((each) => each.parsed)).toEqual([undefined, undefined]);
    expect(JSON.parse(heard[0]!.raw)).toMatchObject({ params: { status: 'working' } });
  });
});
