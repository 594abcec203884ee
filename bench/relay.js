// @ts-check
/**
 * A raw byte relay: stdin to the child's stdin, the child's stdout to stdout, with no parsing at all. The
 * physical floor of one extra stdio hop, against which taskgate stdio→stdio is judged.
 *
 *   node bench/relay.js -- command [args...]
 */
import { spawn } from 'node:child_process';

const [command, ...args] = process.argv.slice(process.argv.indexOf('--') + 1);
const child = spawn(/** @type {string} */ (command), args, { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
child.once('exit', (code) => process.exit(code ?? 1));
process.stdin.once('end', () => child.stdin.end());
