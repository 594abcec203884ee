import type { Readable } from 'node:stream';

/** Each newline-delimited line a stream carries, as its bytes, to `each` as it arrives. */
export function byteLines(stream: Readable, each: (line: Buffer) => void): void {
  let pending: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      each(Buffer.concat([...pending, chunk.subarray(start, nl)]));
      pending = [];
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
}
