// @ts-check
/**
 * The MCP SDK the bench drives its targets with: the root's (the one taskgate is built and tested on),
 * named by relative path on purpose. bench/ is its own npm package, and its peers (supergateway) pin an
 * older SDK that npm hoists into bench/node_modules, where a bare `@modelcontextprotocol/sdk` import
 * from this folder would find it first.
 */
export { Client } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.js';
export { StdioClientTransport } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.js';
export { StreamableHTTPClientTransport } from '../node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js';
export {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
} from '../node_modules/@modelcontextprotocol/sdk/dist/esm/types.js';
