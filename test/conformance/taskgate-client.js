// @ts-check
/**
 * The client under test for the suite's client scenarios (`conformance client --command`): taskgate
 * (dist/cli.js, on stdio, `--upstream-url` the scenario's server, which the suite appends as the last
 * argument), with an SDK client in front of it that does what the scenario waits for: it lists the tools and
 * calls each one without arguments, then closes. So the scenario sees taskgate as its client.
 *
 * Run by the CLI on Node 22 through a shell; it is started with the Node taskgate is tested on
 * (suite.ts passes process.execPath in the command).
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const TASKGATE = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const serverUrl = process.argv.at(-1);
if (serverUrl === undefined || !/^https?:\/\//.test(serverUrl)) {
  console.error('usage: taskgate-client.js SERVER_URL');
  process.exit(2);
}

const client = new Client({ name: 'through-taskgate', version: '1.0.0' });
await client.connect(
  new StdioClientTransport({
    command: process.execPath,
    args: [TASKGATE, '--upstream-url', serverUrl],
    stderr: 'inherit',
  }),
);
try {
  const { tools } = await client.listTools();
  for (const tool of tools) await client.callTool({ name: tool.name, arguments: {} });
} finally {
  await client.close();
}
