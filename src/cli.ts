#!/usr/bin/env node
/** flags → config → start (or check, or print); nothing else. */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { UsageError, parseCommandLine } from './config/flags.js';
import { HELP } from './config/help.js';
import { ConfigError, loadConfig } from './config/load.js';
import { printable, summary } from './config/report.js';
import { runHttpGateway } from './http-proxy.js';
import { startStdioProxy } from './stdio-proxy.js';
import { ListenError } from './transport/listen.js';
import { UpstreamStartError } from './transport/stdio-upstream.js';

const EXAMPLE_SERVER = fileURLToPath(new URL('../examples/legacy-server.js', import.meta.url));

/** For what a person asked to see (help, version, print-config): never during a proxy run. */
function print(text: string): Promise<void> {
  // eslint-disable-next-line no-restricted-properties -- not a proxy run: stdout is free
  return new Promise((resolve) => process.stdout.write(text, () => resolve()));
}

async function main(): Promise<number> {
  const commandLine = parseCommandLine(process.argv.slice(2));
  if (commandLine.help) {
    await print(HELP);
    return 0;
  }
  if (commandLine.version) {
    const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
    await print(`taskgate ${version}\n`);
    return 0;
  }
  const loaded = loadConfig(commandLine, process.env, { command: process.execPath, args: [EXAMPLE_SERVER] });
  if (commandLine.subcommand === 'check-config') {
    process.stderr.write(`${summary(loaded)}\n`);
    return 0;
  }
  if (commandLine.subcommand === 'print-config') {
    await print(printable(loaded));
    return 0;
  }
  const config = loaded.config;
  return config.http.listen === undefined ? startStdioProxy(config) : runHttpGateway(config);
}

main().then(
  // Exit explicitly: an open stdin (the client never closed it) would otherwise keep the process alive.
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) {
      process.stderr.write(`taskgate: ${error.message}\nRun "taskgate --help" for the flags.\n`);
    } else if (
      error instanceof ConfigError ||
      error instanceof UpstreamStartError ||
      error instanceof ListenError
    ) {
      process.stderr.write(`taskgate: ${error.message}\n`);
    } else process.stderr.write(`taskgate: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  },
);
