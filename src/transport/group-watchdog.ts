/**
 * Stops the process groups of this process's stdio upstreams if taskgate dies without stopping them
 * (SIGKILL, a crash). Node cannot ask for PR_SET_PDEATHSIG, but the kernel closes a dead process's pipes:
 * one tiny /bin/sh per taskgate process reads the groups from a pipe taskgate holds ("+pgid" and "-pgid",
 * one a line) and, once the pipe ends, sends SIGTERM to every group still listed and SIGKILL to those
 * still there a second later. It runs in a session of its own, so a terminal's Ctrl-C or hang-up does not
 * reach it, and it is started with the first group. Not on Windows, which has no process groups.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';

/** `g` holds the listed groups as " 12 34 ", so that " 3 " never matches inside " 34 ". */
const SCRIPT = `
g=' '
while read -r op id; do
  case $op in
    +) g="$g$id " ;;
    -) case $g in *" $id "*) g="\${g%% $id *} \${g#* $id }" ;; esac ;;
  esac
done
[ -z "\${g# }" ] && exit 0
for id in $g; do kill -s TERM -- "-$id"; done 2>/dev/null
i=0
while [ $i -lt 20 ]; do
  left=
  for id in $g; do kill -s 0 -- "-$id" 2>/dev/null && left="$left $id"; done
  [ -z "$left" ] && exit 0
  g=$left
  sleep 0.05
  i=$((i + 1))
done
for id in $g; do kill -s KILL -- "-$id"; done 2>/dev/null
`;

class GroupWatchdog {
  private readonly groups = new Set<number>();
  private shell: ChildProcess | undefined;
  private unavailable = false;

  /** The group is stopped by the watchdog if taskgate goes before it has stopped the group itself. */
  watch(pgid: number, logger: Logger): void {
    this.groups.add(pgid);
    if (this.shell === undefined) this.start(logger);
    else this.shell.stdin?.write(`+ ${pgid}\n`);
  }

  /** The group has been stopped (or has ended): its id may be another's from now on. */
  forget(pgid: number): void {
    if (this.groups.delete(pgid)) this.shell?.stdin?.write(`- ${pgid}\n`);
  }

  private start(logger: Logger): void {
    if (this.unavailable) return;
    const shell = spawn('/bin/sh', ['-c', SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    this.shell = shell;
    shell.stdin.on('error', () => undefined);
    shell.stdin.write([...this.groups].map((pgid) => `+ ${pgid}\n`).join(''));
    // Neither the watchdog nor its pipe keeps taskgate running.
    shell.unref();
    (shell.stdin as unknown as { unref?: () => void }).unref?.();
    shell.once('error', (error) => {
      this.unavailable = true;
      this.shell = undefined;
      logger.warn(
        { err: error },
        'cannot start the watchdog (/bin/sh): an upstream server may outlive a taskgate that is killed',
      );
    });
    shell.once('exit', (code, signal) => {
      if (this.shell !== shell) return;
      this.shell = undefined;
      logger.warn(
        { code, signal },
        'the watchdog of the upstream servers exited; starting another with the next server',
      );
    });
  }
}

/** One per process: every stdio upstream's group is given to it. */
export const groupWatchdog = process.platform === 'win32' ? undefined : new GroupWatchdog();
