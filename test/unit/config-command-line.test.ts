import { describe, expect, it } from 'vitest';
import { UsageError, parseCommandLine } from '../../src/config/flags.js';

const usageMessage = (argv: string[]): string => {
  try {
    parseCommandLine(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as UsageError).message;
  }
  throw new Error('expected a UsageError');
};

describe('the command line', () => {
  it('reads --config', () => {
    expect(parseCommandLine(['--config', 'a.yaml'])).toMatchObject({ configFile: 'a.yaml' });
    expect(parseCommandLine([]).configFile).toBeUndefined();
  });

  it('reads check-config FILE, and check-config --config FILE', () => {
    expect(parseCommandLine(['check-config', 'a.yaml', '--max-tasks', '5'])).toMatchObject({
      subcommand: 'check-config',
      configFile: 'a.yaml',
      input: { tasks: { maxTasks: 5 } },
    });
    expect(parseCommandLine(['check-config', '--config', 'a.yaml'])).toMatchObject({ configFile: 'a.yaml' });
  });

  it('refuses check-config without a file, and a file given twice', () => {
    expect(usageMessage(['check-config'])).toContain('check-config needs the config file');
    expect(usageMessage(['check-config', 'a.yaml', '--config', 'b.yaml'])).toContain('once');
  });

  it('reads print-config with flags and an upstream command', () => {
    expect(parseCommandLine(['print-config', '--max-ttl', '5', '--', 'node', 's.js'])).toMatchObject({
      subcommand: 'print-config',
      input: { tasks: { maxTtl: 5 }, upstream: { command: 'node', args: ['s.js'] } },
    });
  });

  it('reads a sub-command only in first place', () => {
    expect(usageMessage(['--max-ttl', '5', 'print-config'])).toBe(
      'print-config comes first: taskgate print-config ...',
    );
    expect(parseCommandLine(['--', 'check-config']).input.upstream).toEqual({
      command: 'check-config',
      args: [],
    });
  });

  it.each([
    ['--max-task', 'unknown flag --max-task (did you mean --max-tasks?)'],
    ['--pol-interval=5', 'unknown flag --pol-interval (did you mean --poll-interval?)'],
    [
      '--no-status-notification',
      'unknown flag --no-status-notification (did you mean --no-status-notifications?)',
    ],
    ['--confg', 'unknown flag --confg (did you mean --config?)'],
    ['--frobnicate', 'unknown flag --frobnicate'],
    ['-x', 'unknown flag -x'],
  ])('names the closest flag to %s', (flag, message) => {
    expect(usageMessage([flag, '1'])).toBe(message);
  });

  it('names the closest sub-command to a mistyped one, and says where a server command goes', () => {
    expect(usageMessage(['chek-config', 'a.yaml'])).toBe(
      'unknown command "chek-config" (did you mean check-config?)',
    );
    expect(usageMessage(['node', 'server.js'])).toContain('after "--"');
  });

  it('reads every setting flag into its place', () => {
    const { input } = parseCommandLine([
      '--list-page-size=10',
      '--unwrap-min-poll-interval=10',
      '--unwrap-max-poll-interval=20',
      '--unwrap-keep-alive-interval=0',
    ]);
    expect(input).toEqual({
      tasks: { listPageSize: 10 },
      unwrap: { minPollInterval: 10, maxPollInterval: 20, keepAliveInterval: 0 },
    });
  });
});
