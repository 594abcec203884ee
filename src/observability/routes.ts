/**
 * The operator's pages: `GET /metrics` (Prometheus text format), `GET /dashboard` and the JSON it
 * refreshes from, `GET /dashboard/data`, and `GET /`, a page that links them. Served beside the MCP
 * endpoint by the HTTP front, or by the admin listener (stdio mode, or to keep them off the front).
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_REFRESH_MS, renderDashboard } from './dashboard.js';
import type { Metrics } from './metrics.js';
import type { TaskBoard } from './task-board.js';

/** Answers the request and returns true when the path is one of its routes; false leaves it alone. */
export type Routes = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<boolean>;

/**
 * Whether this request may see the operator's pages: without authentication every request that reached
 * here (past the Origin and Host checks) may; with it, only an operator.
 */
export type Authorize = (req: IncomingMessage, page: Page) => Verdict | Promise<Verdict>;
export type Verdict = 'allowed' | 'unauthenticated' | 'forbidden';
/** Which of the pages a request is for: /metrics, or the dashboard (its data and the index too). */
export type Page = 'metrics' | 'dashboard';

export interface OperationsRoutesOptions {
  metrics: Metrics;
  board: TaskBoard;
  authorize?: Authorize;
}

const PATHS = new Set(['/', '/metrics', '/dashboard', '/dashboard/', '/dashboard/data']);
const MIN_REFRESH_MS = 250;
const MAX_REFRESH_MS = 60_000;

export function operationsRoutes(options: OperationsRoutesOptions): Routes {
  const { metrics, board, authorize = () => 'allowed' } = options;
  return async (req, res, path) => {
    if (!PATHS.has(path)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('Method not allowed\n');
      return true;
    }
    const verdict = await authorize(req, path === '/metrics' ? 'metrics' : 'dashboard');
    if (verdict === 'unauthenticated') {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('Unauthorized\n');
      return true;
    }
    if (verdict === 'forbidden') {
      res
        .writeHead(403, { 'content-type': 'text/plain' })
        .end(
          'Forbidden: /metrics and /dashboard are for operators: the subjects named in auth.adminSubjects or granted the page by auth.rules, or the admin listener (--admin-listen)\n',
        );
      return true;
    }
    if (path === '/') {
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
        .end(INDEX);
    } else if (path === '/dashboard/') {
      res.writeHead(308, { location: '/dashboard' }).end();
    } else if (path === '/metrics') {
      const text = await metrics.text();
      res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' }).end(text);
    } else if (path === '/dashboard/data') {
      res
        .writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' })
        .end(JSON.stringify(board.snapshot()));
    } else {
      const nonce = randomBytes(16).toString('base64');
      const page = renderDashboard(board.snapshot(), { nonce, refreshMs: refreshOf(req) });
      res
        .writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          'content-security-policy': [
            "default-src 'none'",
            `script-src 'nonce-${nonce}'`,
            `style-src 'nonce-${nonce}'`,
            "connect-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
          ].join('; '),
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
        })
        .end(page);
    }
    return true;
  };
}

const INDEX = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>taskgate</title></head>
<body>
<h1>taskgate</h1>
<ul>
<li><a href="/dashboard">/dashboard</a>: the tasks this process knows of</li>
<li><a href="/metrics">/metrics</a>: Prometheus metrics</li>
<li><a href="/healthz">/healthz</a>: alive</li>
</ul>
</body>
</html>
`;

/** `?refresh=MS`, kept within sensible bounds. */
function refreshOf(req: IncomingMessage): number {
  const asked = Number(new URL(req.url ?? '/', 'http://localhost').searchParams.get('refresh'));
  if (!Number.isFinite(asked) || asked <= 0) return DEFAULT_REFRESH_MS;
  return Math.min(MAX_REFRESH_MS, Math.max(MIN_REFRESH_MS, Math.round(asked)));
}
