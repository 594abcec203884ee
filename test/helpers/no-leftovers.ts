/**
 * Vitest global setup for the tests that start processes: the run fails if any process a test started is
 * still alive once every test has finished, and names each one (then ends it, so that it does not stay on a
 * machine other runs share).
 *
 * A process belongs to this run when its environment carries this run's MCP_TASKGATE_TEST_RUN (set here,
 * before the workers start, so every child that keeps its parent's environment inherits it; not TASKGATE_*,
 * which taskgate refuses when it does not know the name). Other runs on the machine, and anything else started
 * from this checkout meanwhile (a tsc, another vitest), are never looked at. So a test that spawns a process
 * with an environment of its own passes process.env into it (the SDK's StdioClientTransport, given none,
 * keeps only PATH, HOME and a few).
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

const MARKER = 'MCP_TASKGATE_TEST_RUN';
/** How long a process that a test just stopped may take to be gone. */
const EXIT_GRACE_MS = 5_000;

interface Proc {
  pid: number;
  ppid: number;
  command: string;
  run: string | undefined;
}

function read(pid: string): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name in parentheses may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined;
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    const marker = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .find((entry) => entry.startsWith(`${MARKER}=`));
    return {
      pid: Number(pid),
      ppid: Number(fields[1]),
      command,
      run: marker?.slice(MARKER.length + 1),
    };
  } catch {
    return undefined; // gone meanwhile, or a kernel thread
  }
}

function leftovers(run: string): Proc[] {
  const isVitest = (proc: Proc): boolean =>
    proc.pid === process.pid || (proc.ppid === process.pid && proc.command.includes('/vitest/dist/'));
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(read)
    .filter((proc): proc is Proc => proc !== undefined && proc.run === run && !isVitest(proc));
}

export default function setup(): () => Promise<void> {
  // Both projects' setups run in this process and share it; one inherited from another run is replaced.
  if (!process.env[MARKER]?.startsWith(`${process.pid}-`))
    process.env[MARKER] = `${process.pid}-${randomUUID()}`;
  const run = process.env[MARKER];
  return async () => {
    const deadline = Date.now() + EXIT_GRACE_MS;
    let left = leftovers(run);
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      left = leftovers(run);
    }
    if (left.length === 0) return;
    for (const proc of left) {
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        // ended meanwhile
      }
    }
    process.exitCode = 1;
    throw new Error(
      `${left.length} process(es) started by the tests outlived them (now killed):\n` +
        left.map((proc) => `  pid ${proc.pid}: ${proc.command}`).join('\n'),
    );
  };
}
