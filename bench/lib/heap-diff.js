// @ts-check
/**
 * What grew between two V8 heap snapshots (.heapsnapshot, as DevTools or the inspector write them): the
 * self size and count of objects by kind and constructor name, after minus before, largest first. Used
 * to say what an idle session costs (bench/sharing.js with BENCH_SHARING_HEAP_DIR).
 *
 *   node bench/lib/heap-diff.js BEFORE.heapsnapshot AFTER.heapsnapshot [rows] [divisor]
 *
 * `divisor` (e.g. the sessions opened in between) divides every figure, to read it per session.
 */
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/**
 * Self size and count by "type name" of every node of a snapshot.
 * @param {string} path @returns {Map<string, { bytes: number, count: number }>}
 */
export function tally(path) {
  const snapshot = JSON.parse(readFileSync(path, 'utf8'));
  const fields = /** @type {string[]} */ (snapshot.snapshot.meta.node_fields);
  const types = /** @type {string[]} */ (snapshot.snapshot.meta.node_types[0]);
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const nodes = /** @type {number[]} */ (snapshot.nodes);
  const strings = /** @type {string[]} */ (snapshot.strings);
  /** @type {Map<string, { bytes: number, count: number }>} */
  const byName = new Map();
  for (let i = 0; i < nodes.length; i += width) {
    const type = types[/** @type {number} */ (nodes[i + typeAt])] ?? '?';
    // Strings and code by kind only: their "names" are their contents.
    const name =
      type === 'object' || type === 'closure' || type === 'native'
        ? `${type} ${strings[/** @type {number} */ (nodes[i + nameAt])]}`
        : type;
    const entry = byName.get(name) ?? { bytes: 0, count: 0 };
    entry.bytes += /** @type {number} */ (nodes[i + sizeAt]);
    entry.count++;
    byName.set(name, entry);
  }
  return byName;
}

/** @param {string} before @param {string} after @param {number} rows @param {number} divisor */
export function heapDiff(before, after, rows = 30, divisor = 1) {
  const a = tally(before);
  const b = tally(after);
  const names = new Set([...a.keys(), ...b.keys()]);
  const grown = [...names].map((name) => {
    const x = a.get(name) ?? { bytes: 0, count: 0 };
    const y = b.get(name) ?? { bytes: 0, count: 0 };
    return { name, bytes: (y.bytes - x.bytes) / divisor, count: (y.count - x.count) / divisor };
  });
  grown.sort((p, q) => q.bytes - p.bytes);
  const total = grown.reduce((sum, g) => sum + g.bytes, 0);
  return { total, top: grown.slice(0, rows) };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [before, after, rows, divisor] = process.argv.slice(2);
  if (!before || !after) throw new Error('usage: node bench/lib/heap-diff.js BEFORE AFTER [rows] [divisor]');
  const { total, top } = heapDiff(before, after, Number(rows ?? 30), Number(divisor ?? 1));
  process.stdout.write(`total self size grown: ${total.toFixed(0)} B\n`);
  for (const g of top)
    process.stdout.write(
      `${g.bytes.toFixed(0).padStart(10)} B ${g.count.toFixed(2).padStart(9)} × ${g.name}\n`,
    );
}
