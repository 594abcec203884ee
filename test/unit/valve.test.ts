import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { PausableInput, Valve } from '../../src/transport/valve.js';

/** A writable that takes nothing until told to: its writes pile up in writableLength. */
function stuckOutput(): { output: Writable; flow: () => void } {
  const held: (() => void)[] = [];
  let flowing = false;
  const output = new Writable({
    highWaterMark: 16,
    write(_chunk, _encoding, done) {
      if (flowing) done();
      else held.push(done);
    },
  });
  const flow = (): void => {
    flowing = true;
    for (const done of held.splice(0)) done();
  };
  return { output, flow };
}

describe('Valve', () => {
  it('pauses the inputs it feeds while an output is over the mark, and resumes them once it drains', async () => {
    const valve = new Valve(100);
    const input = new PassThrough();
    input.on('data', () => undefined);
    valve.feed(new PausableInput(input));
    const { output, flow } = stuckOutput();
    output.write(Buffer.alloc(60));
    output.write(Buffer.alloc(60));
    valve.wrote(output);
    expect(input.isPaused()).toBe(true);
    const drained = new Promise((resolve) => output.once('drain', resolve));
    flow();
    await drained;
    expect(input.isPaused()).toBe(false);
  });

  it('does not pause for an output at or under the mark', () => {
    const valve = new Valve(100);
    const input = new PassThrough();
    input.on('data', () => undefined);
    valve.feed(new PausableInput(input));
    const { output } = stuckOutput();
    output.write(Buffer.alloc(100));
    valve.wrote(output);
    expect(input.isPaused()).toBe(false);
  });

  it('keeps an input fed to two valves paused until both are open', async () => {
    const [first, second] = [new Valve(10), new Valve(10)];
    const input = new PassThrough();
    input.on('data', () => undefined);
    const pausable = new PausableInput(input);
    first.feed(pausable);
    second.feed(pausable);
    const a = stuckOutput();
    const b = stuckOutput();
    a.output.write(Buffer.alloc(20));
    first.wrote(a.output);
    b.output.write(Buffer.alloc(20));
    second.wrote(b.output);
    const drained = new Promise((resolve) => a.output.once('drain', resolve));
    a.flow();
    await drained;
    expect(input.isPaused()).toBe(true);
    b.output.destroy();
    await new Promise((resolve) => b.output.once('close', resolve));
    expect(input.isPaused()).toBe(false);
  });

  it('holds an input fed while it is shut, and lets it go when it is unfed', () => {
    const valve = new Valve(10);
    const { output } = stuckOutput();
    output.write(Buffer.alloc(20));
    valve.wrote(output);
    const input = new PassThrough();
    input.on('data', () => undefined);
    const unfeed = valve.feed(new PausableInput(input));
    expect(input.isPaused()).toBe(true);
    unfeed();
    expect(input.isPaused()).toBe(false);
  });
});
