/**
 * The admin listener (`--admin-listen`): a small HTTP server of its own for /metrics, /healthz and
 * /dashboard, for stdio mode (which has no HTTP front) or to keep those pages off a public front. It
 * binds the loopback unless told otherwise, and on the loopback it refuses a Host that is not one (a
 * DNS-rebinding page could otherwise read it).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Routes } from './routes.js';
import { isLoopbackHost } from '../security/loopback.js';
import { listenOn } from '../transport/listen.js';

export const DEFAULT_ADMIN_HOST = '127.0.0.1';

export interface AdminListener {
  url: URL;
  close(): Promise<void>;
}

/** `PORT` or `HOST:PORT` (`[::1]:PORT` for IPv6) → where to bind; a bare port binds the loopback. */
export function parseListen(listen: string): { host: string; port: number } {
  const colon = listen.lastIndexOf(':');
  if (colon === -1 || listen.endsWith(']')) return { host: DEFAULT_ADMIN_HOST, port: Number(listen) };
  return { host: listen.slice(0, colon), port: Number(listen.slice(colon + 1)) };
}

export async function startAdminListener(
  listen: string,
  routes: Routes,
  logger: Logger,
): Promise<AdminListener> {
  const { host, port } = parseListen(listen);
  const loopback = isLoopbackHost(host);
  const server: Server = createServer({ headersTimeout: 10_000, requestTimeout: 30_000 }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (loopback && !isLoopbackHost(req.headers.host ?? '')) {
      res.writeHead(403, { 'content-type': 'text/plain' }).end('Forbidden: this Host is not allowed\n');
      return;
    }
    if (path === '/healthz' && req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      return;
    }
    routes(req, res, path)
      .then((answered) => {
        if (!answered) res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
      })
      .catch((error: unknown) => {
        logger.error({ err: error, path }, 'admin request failed');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end();
      });
  });
  await listenOn(server, host, port);
  server.on('error', (error) => logger.error({ err: error }, 'admin listener error'));
  const url = new URL(`http://${host}:${(server.address() as AddressInfo).port}/`);
  let closing: Promise<void> | undefined;
  return {
    url,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      })),
  };
}
