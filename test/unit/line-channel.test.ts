import { once } from 'node:events';
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LineChannel } from '../../src/transport/line-channel.js';

/** A stream that records each system-call-sized write it is given. */
class RecordingWritable extends Writable {
  readonly writes: string[] = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.writes.push(chunk.toString());
    callback();
  }

  override _writev(chunks: { chunk: Buffer }[], callback: () => void): void {
    this.writes.push(chunks.map(({ chunk }) => chunk.toString()).join(''));
    callback();
  }
}

function channelWriting(): { channel: LineChannel; output: RecordingWritable } {
  const output = new RecordingWritable();
  const channel = new LineChannel(new PassThrough(), output, 1024, 'test peer');
  channel.start({ message: () => undefined, malformed: () => undefined, closed: () => undefined });
  return { channel, output };
}

const tick = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

describe('LineChannel', () => {
  it('writes what is sent in one tick with one write, each message on its own line, in order', async () => {
    const { channel, output } = channelWriting();
    channel.sendRaw(Buffer.from('{"a":1}'));
    channel.send({ b: 2 });
    channel.sendRaw('{"c":3}');
    expect(output.writes).toEqual([]);
    await tick();
    expect(output.writes).toEqual(['{"a":1}\n{"b":2}\n{"c":3}\n']);
    channel.sendRaw('{"d":4}');
    await tick();
    expect(output.writes).toEqual(['{"a":1}\n{"b":2}\n{"c":3}\n', '{"d":4}\n']);
  });

  it('still delivers what was sent in the tick it is closed in', async () => {
    const { channel, output } = channelWriting();
    channel.sendRaw('{"last":true}');
    await channel.close();
    await once(output, 'finish');
    expect(output.writes.join('')).toBe('{"last":true}\n');
  });
});
