#!/usr/bin/env node
/**
 * flags → config → start (or check, or print); nothing else. Each run loads only what it needs (the
 * front it serves, the report it prints; `--version` alone nothing at all), since most of a start's
 * time goes on loading modules.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const EXAMPLE_SERVER = fileURLToPath(new URL('../examples/legacy-server.js', import.meta.url));

/** For what a person asked to see (help, version, print-config): never during a proxy run. */
function print(text: string): Promise<void> {
  // eslint-disable-next-line no-restricted-properties -- not a proxy run: stdout is free
  return new Promise((resolve) => process.stdout.write(text, () => resolve()));
}

function printVersion(): Promise<void> {
  const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
  return print(`taskgate ${version}\n`);
}

async function main(argv: string[]): Promise<number> {
  // What parseCommandLine makes of either alone, without loading the settings (and zod) it parses with.
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    await printVersion();
    return 0;
  }
  const commandLine = (await import('./config/flags.js')).parseCommandLine(argv);
  if (commandLine.help) {
    await print((await import('./config/help.js')).HELP);
    return 0;
  }
  if (commandLine.version) {
    await printVersion();
    return 0;
  }
  const { loadConfig } = await import('./config/load.js');
  const loaded = loadConfig(commandLine, process.env, { command: process.execPath, args: [EXAMPLE_SERVER] });
  if (commandLine.subcommand === 'check-config') {
    process.stderr.write(`${(await import('./config/report.js')).summary(loaded)}\n`);
    return 0;
  }
  if (commandLine.subcommand === 'print-config') {
    await print((await import('./config/report.js')).printable(loaded));
    return 0;
  }
  const config = loaded.config;
  return config.http.listen === undefined
    ? (await import('./stdio-proxy.js')).startStdioProxy(config)
    : (await import('./http-proxy.js')).runHttpGateway(config);
}

/** What a failed run says on stderr, and its exit code: the message alone for what the user can fix. */
async function failure(error: unknown): Promise<[string, number]> {
  const stack = `taskgate: ${error instanceof Error ? error.stack : String(error)}\n`;
  // The errors the user can fix are these modules' own (loaded already by whichever threw).
  const modules = await Promise.all([
    import('./config/flags.js'),
    import('./config/load.js'),
    import('./transport/listen.js'),
    import('./transport/stdio-upstream.js'),
  ]).catch(() => undefined);
  if (!modules) return [stack, 1];
  const [{ UsageError }, { ConfigError }, { ListenError }, { UpstreamStartError }] = modules;
  if (error instanceof UsageError) {
    return [`taskgate: ${error.message}\nRun "taskgate --help" for the flags.\n`, 2];
  }
  if (error instanceof ConfigError || error instanceof UpstreamStartError || error instanceof ListenError) {
    return [`taskgate: ${error.message}\n`, 1];
  }
  return [stack, 1];
}

main(process.argv.slice(2)).then(
  // Exit explicitly: an open stdin (the client never closed it) would otherwise keep the process alive.
  (code) => process.exit(code),
  async (error: unknown) => {
    const [text, code] = await failure(error);
    process.stderr.write(text);
    process.exitCode = code;
  },
);
