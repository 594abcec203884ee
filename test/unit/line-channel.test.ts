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

/**
 * A channel reading `input` whose every message is handled by `onMessage` (sending on `to`, as the session
 * forwards), and the chunk it is given handled as one read.
 */
function reading(onMessage: (raw: Buffer) => void): { read: (chunk: string) => void } {
  const input = new PassThrough();
  const channel = new LineChannel(input, new PassThrough(), 1024, 'reading peer');
  channel.start({ message: onMessage, malformed: () => undefined, closed: () => undefined });
  return { read: (chunk) => input.emit('data', Buffer.from(chunk)) };
}

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

  it('writes the one line sent while a read is handled when that read ends, newline and all in one write', () => {
    const { channel, output } = channelWriting();
    const { read } = reading((raw) => channel.sendRaw(raw));
    read('{"id":1}\n');
    expect(output.writes).toEqual(['{"id":1}\n']);
    read('{"id":2}\n');
    expect(output.writes).toEqual(['{"id":1}\n', '{"id":2}\n']);
  });

  it('writes the lines sent while one read is handled in one write, in the order sent', async () => {
    const { channel, output } = channelWriting();
    const { read } = reading((raw) => {
      const n = (JSON.parse(raw.toString()) as { n: number }).n;
      if (n === 1) channel.sendRaw(raw);
      else if (n === 2) channel.send({ n });
      else channel.sendRaw(raw.toString());
    });
    read('{"n":1}\n{"n":2}\n{"n":3}\n');
    await tick();
    expect(output.writes).toEqual(['{"n":1}\n{"n":2}\n{"n":3}\n']);
  });

  it('still writes a line sent during a read when the channel is closed in that read', async () => {
    const { channel, output } = channelWriting();
    const { read } = reading((raw) => {
      channel.sendRaw(raw);
      void channel.close();
    });
    read('{"last":true}\n');
    await once(output, 'finish');
    expect(output.writes).toEqual(['{"last":true}\n']);
  });

  it('still writes what later reads make after the handling of one threw', () => {
    const { channel, output } = channelWriting();
    const { read } = reading((raw) => {
      channel.sendRaw(raw);
      if (raw.toString() === '{"id":1}') throw new Error('handler failed');
    });
    expect(() => read('{"id":1}\n')).toThrow('handler failed');
    read('{"id":2}\n');
    expect(output.writes).toEqual(['{"id":1}\n', '{"id":2}\n']);
  });
});
