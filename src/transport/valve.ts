/**
 * Backpressure between the pipes of a stdio connection, as `stream.pipe` does it: while an output holds
 * more than its mark unwritten (the peer at its other end is not reading), the inputs that feed it are
 * not read either, so that what the peer cannot take stays in the pipes and in the writers behind them,
 * not in taskgate. Reading resumes once the output has drained. Pausing, not dropping, keeps every
 * message: a slow reader gets all of it, later, as it would from the server directly.
 */
import type { Readable, Writable } from 'node:stream';

/**
 * How much an output may hold unwritten before the inputs feeding it are paused. A message is written
 * whole, so the most held is this, plus the message that crossed it, plus what was already read. As much
 * as the HTTP front lets an SSE stream fall behind; well above one big result, so that taskgate reads the
 * next while the client takes the last (at 1 MiB, a 4 MiB result stopped the reading until it had gone).
 */
export const UNWRITTEN_MARK_BYTES = 8 * 1024 * 1024;

/** One input, paused while any valve it feeds is shut. */
export class PausableInput {
  private holds = 0;

  constructor(private readonly stream: Readable) {}

  hold(): void {
    if (this.holds++ === 0) this.stream.pause();
  }

  release(): void {
    if (--this.holds === 0) this.stream.resume();
  }
}

/** Backpressure of one channel: the valve its output shuts, and those its input feeds. */
export interface Flow {
  writes?: Valve;
  reads?: Valve[];
}

/** Shuts while one of the outputs it watches is over the mark; the inputs it feeds are paused meanwhile. */
export class Valve {
  private readonly behind = new Set<Writable>();
  private readonly inputs = new Set<PausableInput>();
  /** Readers that pull (an HTTP body) waiting for it to open. */
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly markBytes = UNWRITTEN_MARK_BYTES) {}

  get shut(): boolean {
    return this.behind.size > 0;
  }

  /** Settles once the valve is open. */
  opened(): Promise<void> {
    if (!this.shut) return Promise.resolve();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** `input` feeds this valve's outputs: it is paused while the valve is shut. Returns the undo. */
  feed(input: PausableInput): () => void {
    this.inputs.add(input);
    if (this.behind.size > 0) input.hold();
    return () => {
      if (!this.inputs.delete(input)) return;
      if (this.behind.size > 0) input.release();
    };
  }

  /** After a write to `output`: shuts the valve if the output is now over the mark, until it drains or closes. */
  wrote(output: Writable): void {
    if (output.writableLength <= this.markBytes || this.behind.has(output)) return;
    const open = (): void => {
      output.off('drain', open);
      output.off('close', open);
      this.behind.delete(output);
      if (this.behind.size > 0) return;
      for (const input of this.inputs) input.release();
      for (const resume of this.waiting.splice(0)) resume();
    };
    // Over the mark is over the stream's highWaterMark, so the write returned false and 'drain' will come.
    output.on('drain', open);
    output.on('close', open);
    this.behind.add(output);
    if (this.behind.size === 1) for (const input of this.inputs) input.hold();
  }
}

/**
 * For a reader that pulls (an HTTP response body, read chunk by chunk): undefined when every valve is
 * open, else a promise that settles once they all are, to be awaited before the next read.
 */
export function untilOpen(valves: readonly Valve[]): Promise<void> | undefined {
  const shut = valves.find((valve) => valve.shut);
  if (shut === undefined) return undefined;
  return shut.opened().then(() => untilOpen(valves));
}

/**
 * The two valves of taskgate on stdio: one for what goes to the client (fed by the upstream's output and by
 * the client's own requests, which taskgate may answer itself), one for what goes to the upstream server
 * (fed by the client). The upstream's output is never paused for its own input being behind: a server
 * that writes before it reads would then never read again.
 */
export interface StdioValves {
  toClient: Valve;
  toUpstream: Valve;
}

export const stdioValves = (): StdioValves => ({ toClient: new Valve(), toUpstream: new Valve() });
