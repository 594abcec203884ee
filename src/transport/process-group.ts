/**
 * A stdio upstream's process group (POSIX): signalled as a whole, and looked at to see whether any of it
 * still runs.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Sends `signal` to every process of the group; false when none is left. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * Whether a process of the group still runs. One that has exited but was not reaped does not count: an
 * orphan's zombie lingers wherever PID 1 does not wait for orphans (a container without an init), and
 * holds nothing but its pid. Without /proc (macOS), any process of the group counts.
 */
export function groupRuns(pgid: number): boolean {
  if (!signalGroup(pgid, 0)) return false;
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  const group = String(pgid);
  for (const entry of entries) {
    if (entry.charCodeAt(0) > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so read from its last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ', 3);
    if (pgrp === group && state !== 'Z' && state !== 'X') return true;
  }
  return false;
}
