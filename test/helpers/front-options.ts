/** The HTTP front's options for a test's own front on a free loopback port, with what the test sets. */
import type { HttpFrontOptions } from '../../src/transport/http-front.js';

export function frontOptions(overrides: Partial<HttpFrontOptions> = {}): HttpFrontOptions {
  return {
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    allowedOrigins: [],
    maxMessageBytes: 1024 * 1024,
    maxSessions: 10,
    sessionIdleTimeoutMs: 60_000,
    abandonedSessionTimeoutMs: 60_000,
    eventLogSize: 100,
    eventLogBytes: 1024 * 1024,
    eventLogTotalBytes: 8 * 1024 * 1024,
    ...overrides,
  };
}
