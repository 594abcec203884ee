/** Issue 14.6 (config messages) and 14.10 (--help) for the command line and the file. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/config/flags.js';
import { HELP } from '../../src/config/help.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';

const dir = mkdtempSync(join(tmpdir(), 'taskgate-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The message the command line and the file together are refused with. */
function refusal(argv: string[], file?: string): string {
  const commandLine = parseCommandLine(argv);
  if (file !== undefined) {
    const path = join(dir, 'taskgate.yaml');
    writeFileSync(path, file);
    commandLine.configFile = path;
  }
  try {
    loadConfig(commandLine, {});
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

/** The --help entry of a flag, on one line. */
const helpFor = (flag: string): string => {
  const lines = HELP.split('\n');
  const at = lines.findIndex((line) => line.startsWith(`  ${flag}`));
  return lines
    .slice(at)
    .join('\n')
    .split(/\n {2}[-A-Z]/)[0]!
    .replace(/\s+/g, ' ');
};

describe('issue 14.6: messages a person can act on', () => {
  it('takes a negative number as the value of a flag, and names what the setting allows', () => {
    expect(parseCommandLine(['--max-tasks', '-1']).input).toMatchObject({ tasks: { maxTasks: -1 } });
    expect(refusal(['--max-tasks', '-1'])).toContain('--max-tasks: expected a positive integer, got -1');
    expect(refusal(['--default-ttl', '-0.5'])).toContain('--default-ttl: expected an integer from 1 to');
  });

  it('says a rate must be greater than 0, not "non-negative", when it is 0', () => {
    expect(refusal([], 'limits:\n  taskCreationRate: 0\n')).toContain(
      'limits.taskCreationRate: expected a number greater than 0, got 0',
    );
  });

  it('takes a port alone for --listen, as for --admin-listen, and asks for PORT or HOST:PORT otherwise (issue 27)', () => {
    const loaded = loadConfig(parseCommandLine(['--listen', '8080', '--admin-listen', '9464']), {});
    expect(loaded.config).toMatchObject({ http: { listen: '8080' }, admin: { listen: '9464' } });
    expect(refusal(['--listen', 'localhost'])).toContain(
      '--listen: expected PORT or HOST:PORT, got "localhost"',
    );
  });
});

describe('issue 14.10: --help tells the truth', () => {
  it("shows a --no-X flag's setting as on by default", () => {
    expect(helpFor('--no-status-notifications')).toContain('(default on)');
    expect(helpFor('--no-upstream-restart')).toContain('(default on)');
    expect(helpFor('--expose-task-list')).toContain('(default on over stdio, off on the HTTP front)');
  });

  it('does not say secrets have no flag next to --auth-token, which is one', () => {
    expect(HELP).not.toMatch(/^ {2}Secrets have a variable and no flag/m);
    expect(HELP).toContain('These secrets have a variable and no flag');
    expect(helpFor('--auth-token')).toContain('prefer auth.tokens in the config file');
  });
});
