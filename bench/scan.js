// @ts-check
/**
 * What it costs to know a big MCP result is valid JSON, in one process (issue 33): V8's JSON.parse of
 * its bytes as taskgate did it (utf8 decode, nesting check, parse: `parseFrame`) against one validating
 * scan over the same bytes (`scanJson`, and `envelopeOf` with the envelope read off it).
 *
 *   npm run build && node bench/scan.js [ROUNDS]
 *
 * Payloads: a tools/call response with one text content (prose with newlines and quotes, so with escapes)
 * and one with a base64 image, each of 256 KiB and 4 MiB, and small responses to place the break-even.
 * The methods are alternated round by round; each round times a batch and gives µs per message; printed
 * are the median and range over rounds, and MB/s at the median.
 */
import { randomBytes } from 'node:crypto';

const dist = (/** @type {string} */ path) => new URL(`../dist/${path}`, import.meta.url).href;
const { parseFrame } = await import(dist('protocol/frames.js'));
const { scanJson } = await import(dist('protocol/scan.js'));
const { envelopeOf } = await import(dist('protocol/envelope.js'));

const rounds = Number(process.argv[2] ?? 15);

/** @param {number} bytes */
function prose(bytes) {
  const line = 'The "quick" brown fox — jumps over the lazy dog; naïve café, 日本語 too.\n\tAnd a tab. ';
  return line.repeat(Math.ceil(bytes / Buffer.byteLength(line))).slice(0, bytes);
}
/** @param {object} result */
const response = (result) => Buffer.from(JSON.stringify({ result, jsonrpc: '2.0', id: 42 }));
/** @param {number} bytes */
const textResult = (bytes) => response({ content: [{ type: 'text', text: prose(bytes) }] });
/** @param {number} bytes */
const imageResult = (bytes) =>
  response({
    content: [
      { type: 'image', mimeType: 'image/png', data: randomBytes((bytes * 3) / 4).toString('base64') },
    ],
  });

const KiB = 1024;
const payloads = [
  ['text 256 KiB', textResult(256 * KiB)],
  ['image 256 KiB', imageResult(256 * KiB)],
  ['text 4 MiB', textResult(4096 * KiB)],
  ['image 4 MiB', imageResult(4096 * KiB)],
  ['text 16 KiB', textResult(16 * KiB)],
  ['text 2 KiB', textResult(2 * KiB)],
  ['echo 100 B', response({ content: [{ type: 'text', text: 'ping' }] })],
];

/** @type {[string, (raw: Buffer) => unknown][]} */
const methods = [
  ['JSON.parse (parseFrame)', (raw) => parseFrame(raw, 'bench')],
  ['scanJson', (raw) => scanJson(raw)],
  ['envelopeOf', (raw) => envelopeOf(raw)],
];

/** @param {number[]} values */
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

for (const [name, raw] of /** @type {[string, Buffer][]} */ (payloads)) {
  if (typeof scanJson(raw) === 'string' || envelopeOf(raw)?.kind !== 'response') throw new Error(name);
  // About 40 ms of work per batch.
  const batch = Math.max(1, Math.round(4e6 / raw.length));
  /** @type {number[][]} */
  const times = methods.map(() => []);
  for (let round = -2; round < rounds; round++) {
    methods.forEach(([, run], m) => {
      const start = process.hrtime.bigint();
      for (let k = 0; k < batch; k++) run(raw);
      const us = Number(process.hrtime.bigint() - start) / 1e3 / batch;
      if (round >= 0) times[m]?.push(us);
    });
  }
  const parse = median(times[0] ?? []);
  process.stdout.write(`${name} (${raw.length} bytes, ${batch} per batch, ${rounds} rounds)\n`);
  methods.forEach(([label], m) => {
    const t = times[m] ?? [];
    const us = median(t);
    const mbps = raw.length / us;
    process.stdout.write(
      `  ${label.padEnd(24)} ${us.toFixed(1).padStart(9)} µs  (${Math.min(...t).toFixed(1)}–${Math.max(...t).toFixed(1)})  ${mbps.toFixed(0).padStart(5)} MB/s  ${(us / parse).toFixed(2)}× parse\n`,
    );
  });
}
