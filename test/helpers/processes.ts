/**
 * What runs on this machine, read from /proc (Linux), to check that nothing is left behind: a process
 * that has exited but was not reaped yet (a zombie) does not run.
 */
import { readdirSync, readFileSync } from 'node:fs';

interface Stat {
  pid: number;
  ppid: number;
  state: string;
}

function stat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  const [state, ppid] = text.slice(text.lastIndexOf(')') + 2).split(' ', 2);
  return { pid, ppid: Number(ppid), state: state! };
}

function everyProcess(): Stat[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((entry) => stat(Number(entry)) ?? []);
}

export function runs(pid: number): boolean {
  const found = stat(pid);
  return found !== undefined && found.state !== 'Z' && found.state !== 'X';
}

/** Every running process below `pid` (children, theirs, …). */
export function descendantsOf(pid: number): number[] {
  const all = everyProcess();
  const found: number[] = [];
  const walk = (parent: number): void => {
    for (const entry of all) {
      if (entry.ppid === parent && runs(entry.pid)) {
        found.push(entry.pid);
        walk(entry.pid);
      }
    }
  };
  walk(pid);
  return found;
}

/** Resolves with those of `pids` still running after `withinMs` (none, as soon as none runs). */
export async function stillRunning(pids: number[], withinMs: number): Promise<number[]> {
  const deadline = performance.now() + withinMs;
  let left = pids.filter(runs);
  while (left.length > 0 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    left = left.filter(runs);
  }
  return left;
}

/** Kills what a failed test left, so that it does not outlive the run. */
export function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone.
    }
  }
}
