import { describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError } from '../../src/config/flags.js';
import { HELP } from '../../src/config/help.js';
import { ConfigError, resolveConfig } from '../../src/config/load.js';

const usageError = (argv: string[]): unknown => {
  try {
    parseCommandLine(argv);
  } catch (error) {
    return error;
  }
  return undefined;
};

describe('parseCommandLine', () => {
  it('turns no arguments into an empty input', () => {
    expect(parseCommandLine([])).toEqual({ help: false, version: false, input: { tasks: {} } });
  });

  it('reads --tool-task-support GLOB=VALUE, repeated, in order', () => {
    const { input } = parseCommandLine([
      '--tool-task-support',
      'slow_*=required',
      '--tool-task-support=fast_?=forbidden',
      '--tool-task-support',
      '*=optional',
    ]);
    expect(input.tools).toEqual([
      { match: 'slow_*', taskSupport: 'required' },
      { match: 'fast_?', taskSupport: 'forbidden' },
      { match: '*', taskSupport: 'optional' },
    ]);
  });

  it('splits GLOB=VALUE at the last "="', () => {
    expect(parseCommandLine(['--tool-task-support', 'a=b=required']).input.tools).toEqual([
      { match: 'a=b', taskSupport: 'required' },
    ]);
  });

  it.each(['slow_*=sometimes', 'slow_*', '=required', 'slow_*=', 'slow_*=Required'])(
    'refuses --tool-task-support %j with a UsageError',
    (value) => {
      const error = usageError(['--tool-task-support', value]);
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).message).toContain('required|optional|forbidden');
    },
  );

  it('reads every numeric flag into its place', () => {
    const { input } = parseCommandLine([
      '--default-ttl',
      '60000',
      '--max-ttl=120000',
      '--poll-interval',
      '2500',
      '--max-tasks',
      '50',
      '--max-result-bytes',
      '1e6',
      '--max-message-bytes',
      '1048576',
    ]);
    expect(input).toEqual({
      tasks: {
        defaultTtl: 60_000,
        maxTtl: 120_000,
        pollInterval: 2_500,
        maxTasks: 50,
        maxResultBytes: 1_000_000,
      },
      maxMessageBytes: 1_048_576,
    });
  });

  it.each([
    ['--default-ttl', 'soon'],
    ['--max-ttl', ''],
    ['--poll-interval', ' '],
    ['--max-tasks', 'Infinity'],
    ['--max-result-bytes', '10MB'],
    ['--max-message-bytes', 'NaN'],
  ])('refuses %s %j with a UsageError naming the flag', (flag, value) => {
    const error = usageError([`${flag}=${value}`]);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toContain(flag);
  });

  it('reads the boolean flags and the log level', () => {
    const { input } = parseCommandLine([
      '--expose-task-list',
      '--no-status-notifications',
      '--log-level',
      'debug',
    ]);
    expect(input).toEqual({ tasks: { exposeList: true, statusNotifications: false }, logLevel: 'debug' });
  });

  it('reads -h and -v', () => {
    expect(parseCommandLine(['-h'])).toMatchObject({ help: true, version: false });
    expect(parseCommandLine(['--version'])).toMatchObject({ help: false, version: true });
  });

  it('takes everything after "--" as the upstream command, flags included', () => {
    const { input } = parseCommandLine([
      '--max-tasks',
      '5',
      '--',
      'node',
      'server.js',
      '--max-tasks',
      '9',
      '--',
    ]);
    expect(input.tasks).toEqual({ maxTasks: 5 });
    expect(input.upstream).toEqual({ command: 'node', args: ['server.js', '--max-tasks', '9', '--'] });
  });

  it('refuses a "--" with nothing after it', () => {
    expect(usageError(['--max-tasks', '5', '--'])).toBeInstanceOf(UsageError);
  });

  it.each([
    ['an unknown flag', ['--max-task', '5']],
    ['a positional argument without "--"', ['node', 'server.js']],
    ['a flag without its value', ['--default-ttl']],
    ['a value for a boolean flag', ['--expose-task-list=yes']],
  ])('refuses %s with a UsageError', (_, argv) => {
    expect(usageError(argv)).toBeInstanceOf(UsageError);
  });

  it('leaves range checks to the config: a negative ttl parses, and resolveConfig refuses it with its path', () => {
    const { input } = parseCommandLine(['--default-ttl=-5']);
    expect(input.tasks).toEqual({ defaultTtl: -5 });
    let error: unknown;
    try {
      resolveConfig(input);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^tasks\.defaultTtl: /)]);
  });

  it('produces an input that resolves to a full config', () => {
    const { input } = parseCommandLine([
      '--tool-task-support',
      'slow_*=required',
      '--max-tasks',
      '50',
      '--',
      'node',
      'server.js',
    ]);
    const config = resolveConfig(input);
    expect(config.tools).toEqual([{ match: 'slow_*', taskSupport: 'required' }]);
    expect(config.tasks.maxTasks).toBe(50);
    expect(config.tasks.defaultTtl).toBe(3_600_000);
    expect(config.upstream).toEqual({
      command: 'node',
      args: ['server.js'],
      sharing: 'session',
      poolSize: 4,
    });
  });
});

describe('issue 27: the flags of supergateway and mcp-proxy', () => {
  it.each([
    [
      ['--stdio', 'npx -y some-mcp-server'],
      'unknown flag --stdio: that is supergateway\'s; in taskgate, the server\'s command goes after "--": taskgate --listen PORT -- command args...',
    ],
    [
      ['--port', '8000'],
      "unknown flag --port: that is supergateway's and mcp-proxy's; in taskgate, --listen PORT (on 127.0.0.1) or --listen HOST:PORT",
    ],
    [['--port=8000'], 'in taskgate, --listen PORT (on 127.0.0.1) or --listen HOST:PORT'],
    [
      ['--host', '0.0.0.0', '--port', '8000'],
      "unknown flag --host: that is mcp-proxy's; in taskgate, --listen HOST:PORT",
    ],
    [['--sse', 'http://127.0.0.1:8000/sse'], 'in taskgate, --upstream-url URL, for a Streamable HTTP server'],
  ])('answers %j with what taskgate takes instead', (argv, message) => {
    const error = usageError(argv);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toContain(message);
  });

  it('lists them in --help, each beside what taskgate takes', () => {
    expect(HELP).toMatch(/^ {2}--stdio +the server's command goes after "--"/m);
    expect(HELP).toMatch(/^ {2}--port +--listen PORT \(on 127\.0\.0\.1\) or --listen HOST:PORT$/m);
  });
});
