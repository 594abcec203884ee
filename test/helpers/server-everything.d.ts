/** The part of server-everything (which ships no types) that tests build in process. */
declare module '@modelcontextprotocol/server-everything/dist/server/index.js' {
  import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

  export function createServer(): { server: McpServer; cleanup(sessionId?: string): void };
}
