/**
 * Whether sessions could get an upstream now, for /readyz: the command can be started (it is found and
 * executable, as spawn will look for it), or the server at the URL accepts connections. Asked afresh on
 * each probe, so readiness comes back as soon as the command is installed or the server is up.
 */
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { connect } from 'node:net';
import { delimiter, join, resolve } from 'node:path';
import type { Config } from './config/schema.js';

/** How long the server at the URL has to accept a connection. */
const CONNECT_WAITS_MS = 2_000;

/** Why the upstream cannot be started or reached now; undefined when it can. */
export function upstreamProblem(upstream: Config['upstream']): Promise<string | undefined> {
  if (upstream?.url !== undefined) return unreachable(new URL(upstream.url));
  if (upstream?.command === undefined) return Promise.resolve('no upstream server is configured');
  return notStartable(upstream.command, upstream.cwd, { ...process.env, ...upstream.env });
}

async function notStartable(
  command: string,
  cwd: string | undefined,
  env: Record<string, string | undefined>,
): Promise<string | undefined> {
  if (cwd !== undefined && !(await isDirectory(cwd))) {
    return `the upstream server's working directory "${cwd}" does not exist`;
  }
  const base = resolve(cwd ?? '.');
  // As execvp looks: a name with a slash is a path, any other is looked for on PATH.
  const candidates = command.includes('/')
    ? [resolve(base, command)]
    : (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(resolve(base, dir), command));
  for (const candidate of candidates) if (await isExecutableFile(candidate)) return undefined;
  return command.includes('/')
    ? `the upstream command "${command}" is not an executable file`
    : `the upstream command "${command}" is not found on PATH`;
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (found) => found.isDirectory(),
    () => false,
  );
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/** Opens a TCP connection to the server and closes it at once; the URL's origin only is named. */
function unreachable(url: URL): Promise<string | undefined> {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((done) => {
    const socket = connect({ host, port, timeout: CONNECT_WAITS_MS });
    const settle = (problem: string | undefined): void => {
      socket.destroy();
      done(problem);
    };
    socket.once('connect', () => settle(undefined));
    socket.once('timeout', () =>
      settle(
        `the upstream server at ${url.origin} did not accept a connection within ${CONNECT_WAITS_MS} ms`,
      ),
    );
    socket.once('error', (error: NodeJS.ErrnoException) =>
      settle(
        error.code === 'ECONNREFUSED'
          ? `the upstream server at ${url.origin} refuses connections`
          : `the upstream server at ${url.origin} cannot be reached (${error.code ?? error.message})`,
      ),
    );
  });
}
