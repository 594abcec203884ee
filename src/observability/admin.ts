/**
 * The admin listener (`--admin-listen`): a small HTTP server of its own for /metrics, /healthz, /readyz
 * and /dashboard, for stdio mode (which has no HTTP front) or to keep those pages off a public front. It
 * binds the loopback unless told otherwise, and on the loopback it refuses a Host that is not one (a
 * DNS-rebinding page could otherwise read it).
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Routes } from './routes.js';
import { isLoopbackHost } from '../security/loopback.js';
import { listenOn, parseListen } from '../transport/listen.js';

export interface AdminListener {
  url: URL;
  close(): Promise<void>;
}

/**
 * `notReady` says why the upstream cannot be started or reached now (undefined when it can): /readyz
 * answers as the HTTP front's does, for a probe that only reaches this port; `servers`, with several
 * servers, each one's state for the same answer.
 */
export async function startAdminListener(
  listen: string,
  routes: Routes,
  logger: Logger,
  notReady: () => Promise<string | undefined>,
  servers?: () => Promise<Record<string, object>>,
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
    const answered =
      path === '/readyz' && req.method === 'GET'
        ? readiness(res, notReady, servers).then(() => true)
        : routes(req, res, path);
    answered
      .then((done) => {
        if (!done) res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found\n');
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

/** 200 `{"status":"ready"}`, or 503 with the cause, as the HTTP front's /readyz (each server's state too). */
async function readiness(
  res: ServerResponse,
  notReady: () => Promise<string | undefined>,
  servers: (() => Promise<Record<string, object>>) | undefined,
): Promise<void> {
  const [cause, states] = await Promise.all([notReady(), servers?.()]);
  const body = {
    ...(cause === undefined ? { status: 'ready' } : { status: 'upstream unavailable', cause }),
    ...(states === undefined ? {} : { servers: states }),
  };
  res
    .writeHead(cause === undefined ? 200 : 503, { 'content-type': 'application/json' })
    .end(JSON.stringify(body));
}
