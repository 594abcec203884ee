/**
 * The bytes of one message that arrived in several reads, kept as those reads (issue 33): a big result
 * crosses a pipe in 64 KiB reads, and is scanned and forwarded read by read, never joined into one copy
 * unless something must parse it whole.
 */
export class Pieces {
  constructor(
    readonly parts: Buffer[],
    readonly length: number,
  ) {}

  /** The bytes from `start` to `end`: a view when they lie in one part, a copy when they straddle two. */
  slice(start: number, end: number): Buffer {
    return this.view(start, end).join();
  }

  /** The bytes from `start` to `end` as views of the parts they lie in, never copied. */
  view(start: number, end: number): Pieces {
    const picked: Buffer[] = [];
    let at = 0;
    for (const part of this.parts) {
      const next = at + part.length;
      if (start < next && end > at)
        picked.push(part.subarray(Math.max(start - at, 0), Math.min(end - at, part.length)));
      if (end <= next) break;
      at = next;
    }
    return new Pieces(picked, end - start);
  }

  /** All of it in one Buffer: what parsing the message the usual way takes. */
  join(): Buffer {
    return this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.length);
  }
}

/** A message's bytes: in one Buffer, or in the pieces it arrived as. */
export type Bytes = Buffer | Pieces;

export function bytesIn(raw: Bytes, start: number, end: number): Buffer {
  return raw instanceof Pieces ? raw.slice(start, end) : raw.subarray(start, end);
}
