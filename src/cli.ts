#!/usr/bin/env node
/** flags → config → start; nothing else. */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ConfigError, resolveConfig } from './config/load.js';
import { HELP, UsageError, parseCommandLine } from './config/flags.js';
import { startStdioProxy } from './stdio-proxy.js';
import { UpstreamStartError } from './transport/stdio-upstream.js';

const EXAMPLE_SERVER = fileURLToPath(new URL('../examples/legacy-server.js', import.meta.url));

async function main(): Promise<number> {
  const commandLine = parseCommandLine(process.argv.slice(2));
  if (commandLine.help) {
    process.stderr.write(HELP);
    return 0;
  }
  if (commandLine.version) {
    const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
    process.stderr.write(`taskgate ${version}\n`);
    return 0;
  }
  const config = resolveConfig({
    upstream: { command: process.execPath, args: [EXAMPLE_SERVER] },
    ...commandLine.input,
  });
  return startStdioProxy(config);
}

main().then(
  // Exit explicitly: an open stdin (the client never closed it) would otherwise keep the process alive.
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`taskgate: ${error.message}\n\n${HELP}`);
    else if (error instanceof ConfigError || error instanceof UpstreamStartError) {
      process.stderr.write(`taskgate: ${error.message}\n`);
    } else process.stderr.write(`taskgate: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  },
);
