/** Binding a listener (the HTTP front, the admin listener), with an error a person can act on. */
import type { Server } from 'node:http';

/** Why an address cannot be listened on, by the system's error code. */
const CAUSES: Record<string, string> = {
  EADDRINUSE: 'the address is already in use',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this machine',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved now',
};

/** Where a bare port (`--listen 8080`, `--admin-listen 9464`) binds: the loopback, never every interface. */
export const DEFAULT_LISTEN_HOST = '127.0.0.1';

/** `PORT` or `HOST:PORT` (`[::1]:PORT` for IPv6) → where to bind. */
export function parseListen(listen: string): { host: string; port: number } {
  const colon = listen.lastIndexOf(':');
  if (colon === -1 || listen.endsWith(']')) return { host: DEFAULT_LISTEN_HOST, port: Number(listen) };
  return { host: listen.slice(0, colon), port: Number(listen.slice(colon + 1)) };
}

export class ListenError extends Error {
  constructor(address: string, cause: NodeJS.ErrnoException) {
    super(`cannot listen on ${address}: ${CAUSES[cause.code ?? ''] ?? cause.message}`, { cause });
    this.name = 'ListenError';
  }
}

/** Listens on HOST (brackets allowed around IPv6) and PORT, or fails with a ListenError. */
export function listenOn(server: Server, host: string, port: number, backlog?: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException): void => reject(new ListenError(`${host}:${port}`, error));
    server.once('error', failed);
    server.listen(
      { port, host: host.replace(/^\[|\]$/g, ''), ...(backlog === undefined ? {} : { backlog }) },
      () => {
        server.off('error', failed);
        resolve();
      },
    );
  });
}
