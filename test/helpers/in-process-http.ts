/**
 * A fixture's MCP server over Streamable HTTP from the test's own process: http-serve.js's serveHttp, as
 * the fixture's `--http` mode runs it (real sockets, the SDK's server transport, one server per session),
 * without a process to start.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { serveHttp } from '../fixtures/http-serve.js';

export interface InProcessHttpServer {
  /** The MCP endpoint, e.g. http://127.0.0.1:40123/mcp */
  url: string;
  /** Ends every session at once, as a server that forgets them (POST /end-sessions). */
  endSessions(): Promise<void>;
  /** Drops every connection and stops listening. */
  close(): Promise<void>;
}

/** `faces`: serveHttp's, e.g. an event store for resumable streams. */
export async function serveInProcess(
  makeServer: () => Server,
  label: string,
  faces: Parameters<typeof serveHttp>[3] = {},
): Promise<InProcessHttpServer> {
  const http = serveHttp(makeServer, 0, label, faces);
  if (!http.listening) await once(http, 'listening');
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  return {
    url,
    endSessions: async () => {
      const response = await fetch(new URL('/end-sessions', url), { method: 'POST' });
      await response.body?.cancel();
    },
    close: async () => {
      http.closeAllConnections();
      http.close();
      await once(http, 'close');
    },
  };
}
