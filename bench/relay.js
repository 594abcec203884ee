// @ts-check
/**
 * A raw byte relay: stdin to the child's stdin, the child's stdout to stdout, with no parsing at all. The
 * physical floor of one extra stdio hop, against which taskgate stdio→stdio is judged.
 *
 *   node bench/relay.js [--hold-lines] -- command [args...]
 *
 * --hold-lines: the child's output is handed on a whole line at a time, each line once its newline has
 * come (still unparsed): the floor of a relay that, like taskgate, must see a line end before it sends it.
 */
import { spawn } from 'node:child_process';

const split = process.argv.indexOf('--');
const holdLines = process.argv.slice(2, split).includes('--hold-lines');
const [command, ...args] = process.argv.slice(split + 1);
const child = spawn(/** @type {string} */ (command), args, { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(child.stdin);
if (holdLines) holdEachLine(child.stdout, process.stdout);
else child.stdout.pipe(process.stdout);
child.once('exit', (code) => process.exit(code ?? 1));
process.stdin.once('end', () => child.stdin.end());

/** Reads kept until a newline comes, then written with it in one writev; what follows it is kept. */
function holdEachLine(
  /** @type {import('node:stream').Readable} */ from,
  /** @type {NodeJS.WriteStream} */ to,
) {
  /** @type {Buffer[]} */
  let kept = [];
  from.on('data', (/** @type {Buffer} */ chunk) => {
    const end = chunk.lastIndexOf(0x0a);
    if (end === -1) {
      kept.push(chunk);
      return;
    }
    to.cork();
    for (const part of kept) to.write(part);
    to.write(chunk.subarray(0, end + 1));
    process.nextTick(() => to.uncork());
    kept = end + 1 < chunk.length ? [chunk.subarray(end + 1)] : [];
  });
}
