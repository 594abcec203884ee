/**
 * Loading a config: one test per kind of mistake (each listed with its path, its line and what was given),
 * then the precedence of flags over TASKGATE_* variables over the file over the defaults.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/config/flags.js';
import { loadConfig, type Environment, type Loaded } from '../../src/config/load.js';
import { problemsOf as refusedWith } from '../helpers/config-problems.js';

const dir = mkdtempSync(join(tmpdir(), 'taskgate-config-'));
let files = 0;

/** Writes `text` to a fresh file with this extension and returns its path. */
const file = (text: string, extension = 'yaml'): string => {
  const path = join(dir, `config-${++files}.${extension}`);
  writeFileSync(path, text);
  return path;
};

const load = (argv: string[] = [], env: Environment = {}): Loaded => loadConfig(parseCommandLine(argv), env);

const problemsOf = (argv: string[], env: Environment = {}): string[] => refusedWith(() => load(argv, env));

describe('a bad config file: one problem per mistake, with its path, line and what was given', () => {
  it('an unknown key, with the closest known key', () => {
    const path = file('tasks:\n  maxTtl: 60000\n  pollIntervall: 100\n');
    expect(problemsOf(['--config', path])).toEqual([
      'tasks: unknown key "pollIntervall" (did you mean "pollInterval"?) (line 3)',
    ]);
  });

  it('an unknown key with nothing close: no guess', () => {
    expect(problemsOf(['--config', file('listen: 8080\n')])).toEqual([
      '(root): unknown key "listen" (line 1)',
    ]);
  });

  it('a value of the wrong type', () => {
    const path = file('tools:\n  - match: search\n    ttl: soon\n');
    expect(problemsOf(['--config', path])).toEqual([
      'tools[0].ttl: expected an integer from 1 to 2592000000, got "soon" (line 3)',
    ]);
  });

  it('a value out of range', () => {
    const path = file('tools:\n  - match: a\n  - match: b\n  - match: c\n    ttl: -5\n');
    expect(problemsOf(['--config', path])).toEqual([
      'tools[2].ttl: expected an integer from 1 to 2592000000, got -5 (line 5)',
    ]);
  });

  it('a bad enum value', () => {
    const path = file('tools:\n  - match: "*"\n    taskSupport: sometimes\n');
    expect(problemsOf(['--config', path])).toEqual([
      'tools[0].taskSupport: expected one of required, optional, forbidden, passthrough, got "sometimes" (line 3)',
    ]);
  });

  it('a missing required value', () => {
    expect(problemsOf(['--config', file('tools:\n  - taskSupport: required\n')])).toEqual([
      'tools[0].match: expected a non-empty string, got nothing (line 2)',
    ]);
  });

  it('bad YAML syntax, with its line and column', () => {
    expect(problemsOf(['--config', file('tasks:\n  maxTtl: 5\n maxTasks: 3\n')])).toEqual([
      'line 3, column 1: not valid YAML: All mapping items must start at the same column',
    ]);
  });

  it('a key given twice', () => {
    expect(problemsOf(['--config', file('logLevel: info\nlogLevel: debug\n')])).toEqual([
      'line 2, column 1: not valid YAML: Map keys must be unique',
    ]);
  });

  it('bad JSON syntax, with its line and column', () => {
    const [problem] = problemsOf(['--config', file('{\n  "tasks": {\n    "maxTtl": 5\n  \n', 'json')]);
    expect(problem).toMatch(/^line \d+, column \d+: not valid JSON: /);
  });

  it("issue 14.9: JSON that YAML would accept, a trailing comma, is refused in JSON's words", () => {
    expect(problemsOf(['--config', file('{"tasks": {"maxTtl": 100,}}', 'json')])).toEqual([
      'line 1, column 26: not valid JSON: Expected double-quoted property name',
    ]);
    expect(problemsOf(['--config', file('{\n  "tasks": {\n    "maxTtl": 5\n  \n', 'json')])).toEqual([
      "line 5, column 1: not valid JSON: Expected ',' or '}' after property value",
    ]);
  });

  it('a file that does not exist', () => {
    const path = join(dir, 'nowhere.yaml');
    expect(problemsOf(['--config', path])).toEqual([`cannot read config file ${path}: no such file`]);
  });

  it('a file with an extension that says nothing of its format', () => {
    const path = file('tasks: {}\n', 'conf');
    expect(problemsOf(['--config', path])).toEqual([
      `${path}: name it .yaml, .yml or .json (the extension says how to read it)`,
    ]);
  });

  it('a file that is not a mapping', () => {
    expect(problemsOf(['--config', file('- a\n- b\n')])).toEqual([
      '(root): expected a mapping of settings, got a list',
    ]);
  });

  it('an unset ${VAR}, naming the variable', () => {
    const path = file('upstream:\n  command: node\n  env:\n    TOKEN: ${TASKGATE_TEST_UNSET}\n');
    expect(problemsOf(['--config', path])).toEqual([
      'upstream.env.TOKEN: ${TASKGATE_TEST_UNSET} is used but the environment variable TASKGATE_TEST_UNSET is not set (line 4)',
    ]);
  });

  it('lists every problem at once, in the order of the file', () => {
    const path = file(
      [
        'logLevel: loud',
        'tasks:',
        '  maxTtl: -5',
        '  pollIntervall: 100',
        'tools:',
        '  - match: x',
        '    ttl: 1.5',
        'upstream:',
        '  command: node',
        '  env: { A: "${TASKGATE_TEST_UNSET}" }',
      ].join('\n'),
    );
    expect(problemsOf(['--config', path])).toEqual([
      'logLevel: expected one of fatal, error, warn, info, debug, trace, silent, got "loud" (line 1)',
      'tasks.maxTtl: expected an integer from 1 to 2592000000, got -5 (line 3)',
      'tasks: unknown key "pollIntervall" (did you mean "pollInterval"?) (line 4)',
      'tools[0].ttl: expected an integer from 1 to 2592000000, got 1.5 (line 7)',
      'upstream.env.A: ${TASKGATE_TEST_UNSET} is used but the environment variable TASKGATE_TEST_UNSET is not set (line 10)',
    ]);
  });

  it('names the file in the error message', () => {
    const path = file('tasks: { maxTasks: 0 }\n');
    expect(() => load(['--config', path])).toThrow(`Invalid configuration (${path}):`);
  });
});

describe('bad variables and flag values', () => {
  it('a TASKGATE_* value that does not fit, named by its variable', () => {
    expect(problemsOf([], { TASKGATE_MAX_TTL: 'soon', TASKGATE_EXPOSE_TASK_LIST: 'yes' })).toEqual([
      'TASKGATE_MAX_TTL: expected an integer from 1 to 2592000000, got "soon"',
      'TASKGATE_EXPOSE_TASK_LIST: expected true or false, got "yes"',
    ]);
  });

  it('an unknown TASKGATE_* variable, with the closest one', () => {
    expect(problemsOf([], { TASKGATE_MAX_TLL: '5' })).toEqual([
      'TASKGATE_MAX_TLL: not a taskgate variable (did you mean TASKGATE_MAX_TTL?)',
    ]);
  });

  it('a flag value out of range, named by its flag', () => {
    expect(problemsOf(['--max-tasks=-1', '--log-level', 'loud'])).toEqual([
      '--max-tasks: expected a positive integer, got -1',
      '--log-level: expected one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    ]);
  });

  it('reports a bad file value even where a flag overrides it: the file must stand on its own', () => {
    const path = file('tasks:\n  maxTtl: -5\n');
    expect(problemsOf(['--config', path, '--max-ttl', '1000'])).toEqual([
      'tasks.maxTtl: expected an integer from 1 to 2592000000, got -5 (line 2)',
    ]);
  });

  it('lists the problems of the file, the variables and the flags together', () => {
    const path = file('tasks:\n  maxTasks: 0\n');
    expect(problemsOf(['--config', path, '--max-tasks=0'], { TASKGATE_MAX_TASKS: '0' })).toEqual([
      'tasks.maxTasks: expected a positive integer, got 0 (line 2)',
      'TASKGATE_MAX_TASKS: expected a positive integer, got 0',
      '--max-tasks: expected a positive integer, got 0',
    ]);
  });
});

describe('precedence: flags over variables over the file over the defaults', () => {
  const layered = file('tasks:\n  maxTtl: 1000\n  defaultTtl: 1000\n  pollInterval: 1000\n');

  it('takes each setting from the strongest source that has it', () => {
    const { config } = load(['--config', layered, '--max-ttl', '3000'], {
      TASKGATE_MAX_TTL: '2000',
      TASKGATE_DEFAULT_TTL: '2000',
    });
    expect(config.tasks).toMatchObject({
      maxTtl: 3000, // flag
      defaultTtl: 2000, // variable
      pollInterval: 1000, // file
      maxTasks: 10_000, // default
    });
  });

  it('reads booleans from variables by their setting, --no-X flags included', () => {
    const { config } = load([], {
      TASKGATE_STATUS_NOTIFICATIONS: 'false',
      TASKGATE_EXPOSE_TASK_LIST: '1',
      TASKGATE_LOG_LEVEL: 'debug',
    });
    expect(config.tasks).toMatchObject({ statusNotifications: false, exposeList: true });
    expect(config.logLevel).toBe('debug');
  });

  it('ignores an empty variable', () => {
    expect(load([], { TASKGATE_MAX_TTL: '' }).config.tasks.maxTtl).toBe(86_400_000);
  });

  it('reads the file named by TASKGATE_CONFIG when there is no --config, and --config over it', () => {
    const other = file('tasks:\n  maxTtl: 5000\n');
    expect(load([], { TASKGATE_CONFIG: layered })).toMatchObject({ file: layered });
    expect(load([], { TASKGATE_CONFIG: layered }).config.tasks.maxTtl).toBe(1000);
    expect(load(['--config', other], { TASKGATE_CONFIG: layered }).config.tasks.maxTtl).toBe(5000);
  });

  it('puts --tool-task-support rules before the file’s, so they match first', () => {
    const path = file('tools:\n  - match: "slow_*"\n    taskSupport: required\n    timeout: 500\n');
    const { config } = load(['--config', path, '--tool-task-support', 'slow_one=forbidden']);
    expect(config.tools).toEqual([
      { match: 'slow_one', taskSupport: 'forbidden' },
      { match: 'slow_*', taskSupport: 'required', timeout: 500 },
    ]);
  });

  it('uses the file’s upstream without a command after "--", and the command after "--" over it', () => {
    const path = file('upstream:\n  command: node\n  args: [server.js]\n  env: { A: b }\n');
    expect(load(['--config', path]).config.upstream).toEqual({
      command: 'node',
      args: ['server.js'],
      env: { A: 'b' },
      sharing: 'session',
      poolSize: 4,
    });
    expect(load(['--config', path, '--', 'python', 'srv.py']).config.upstream).toEqual({
      command: 'python',
      args: ['srv.py'],
      sharing: 'session',
      poolSize: 4,
    });
  });

  it('keeps upstream.sharing wherever the server itself comes from', () => {
    const sharedFile = file('upstream:\n  command: node\n  sharing: shared\n');
    expect(load(['--config', sharedFile, '--', 'python']).config.upstream?.sharing).toBe('shared');
    const plainFile = file('upstream:\n  command: node\n');
    const flagged = load(['--config', plainFile, '--upstream-sharing', 'shared']).config.upstream;
    expect(flagged).toEqual({ command: 'node', args: [], sharing: 'shared', poolSize: 4 });
    expect(load(['--upstream-sharing', 'shared', '--', 'python']).config.upstream?.sharing).toBe('shared');
    expect(load(['--config', sharedFile, '--upstream-sharing', 'session']).config.upstream?.sharing).toBe(
      'session',
    );
    expect(load(['--', 'python'], { TASKGATE_UPSTREAM_SHARING: 'shared' }).config.upstream?.sharing).toBe(
      'shared',
    );

    const pooledFile = file('upstream:\n  command: node\n  sharing: pool\n  poolSize: 3\n');
    expect(load(['--config', pooledFile, '--', 'python']).config.upstream).toMatchObject({
      command: 'python',
      sharing: 'pool',
      poolSize: 3,
    });
    expect(
      load(['--upstream-sharing', 'pool', '--upstream-pool-size', '8', '--', 'python']).config.upstream,
    ).toMatchObject({ sharing: 'pool', poolSize: 8 });
  });

  it('falls back to the given upstream only when neither the file nor the command line names one', () => {
    const fallback = { command: 'fallback', args: [] };
    expect(loadConfig(parseCommandLine([]), {}, fallback).config.upstream).toEqual({
      ...fallback,
      sharing: 'session',
      poolSize: 4,
    });
    const path = file('upstream:\n  command: node\n');
    expect(loadConfig(parseCommandLine(['--config', path]), {}, fallback).config.upstream).toEqual({
      command: 'node',
      args: [],
      sharing: 'session',
      poolSize: 4,
    });
  });

  it('reads a JSON file like a YAML one', () => {
    const path = file('{ "tasks": { "maxTasks": 7 }, "tools": [{ "match": "a", "unwrap": true }] }', 'json');
    const { config } = load(['--config', path]);
    expect(config.tasks.maxTasks).toBe(7);
    expect(config.tools).toEqual([{ match: 'a', unwrap: true }]);
  });

  it('reads an empty file as all defaults', () => {
    expect(load(['--config', file('')]).config.tasks.maxTtl).toBe(86_400_000);
  });
});

describe('repeatable flags', () => {
  it('--auth-token and --allowed-origin reach the config, replacing the file’s lists', () => {
    const path = file(
      'auth:\n  tokens:\n    - { token: file-token-0123456789, subject: file }\nhttp:\n  maxSessions: 7\n',
    );
    const { config } = load([
      '--config',
      path,
      '--auth-token',
      'alice-token-0123456789=alice',
      '--allowed-origin',
      'https://app.example',
    ]);
    expect(config.auth.tokens).toEqual([{ token: 'alice-token-0123456789', subject: 'alice' }]);
    expect(config.http.allowedOrigins).toEqual(['https://app.example']);
    expect(config.http.maxSessions).toBe(7);
  });
});

describe('auth.oauth', () => {
  it('refuses offline_access among the scopes it would challenge for and advertise (2026-07-28 SHOULD NOT)', () => {
    const path = file(
      'auth:\n  oauth:\n    issuer: https://auth.example.com\n    resource: https://mcp.example.com/mcp\n    scopes: [mcp:tools, offline_access]\n',
    );
    expect(problemsOf(['--config', path])).toEqual([
      'auth.oauth.scopes: offline_access is for refresh tokens, which no resource requires: leave it to clients to ask for (line 5)',
    ]);
  });
});

describe('auth.rules: each mistake said where it is', () => {
  const TOKENS = 'auth:\n  tokens:\n    - { token: a-token-of-16-chars-or-more, subject: ci }\n  rules:\n';

  it('a rule for nobody', () => {
    const path = file(`${TOKENS}    - { tools: { allow: ['*'] } }\n`);
    expect(problemsOf(['--config', path])).toEqual([
      "auth.rules[0]: name whom the rule is for: subjects, groups or scopes (subjects: ['*'] for every identified caller) (line 5)",
    ]);
  });

  it('groups or scopes without OAuth tokens to carry them', () => {
    const path = file(
      `${TOKENS}    - { subjects: [ci], tools: { allow: ['*'] } }\n    - { groups: [ops], tasks: all }\n`,
    );
    expect(problemsOf(['--config', path])).toEqual([
      'auth.rules[1].groups: groups come from OAuth access tokens: this rule can match nobody without auth.oauth (use subjects)',
    ]);
  });

  it('rules where callers are not identified', () => {
    const path = file("auth:\n  rules:\n    - { subjects: ['*'], taskList: true }\n");
    expect(problemsOf(['--config', path])).toEqual([
      'auth.rules: rules need callers to be identified: configure tokens, trustedHeader, bearerPassthrough or oauth',
    ]);
  });

  it('rules in the file, the tokens that identify callers from a flag', () => {
    const path = file('auth:\n  rules:\n    - { subjects: [ci], taskList: true }\n');
    const { config } = load(['--config', path, '--auth-token', 'a-token-of-16-chars-or-more=ci']);
    expect(config.auth.rules).toEqual([{ subjects: ['ci'], taskList: true }]);
  });

  it('an unknown right, a bad tasks value, a misspelt tools key', () => {
    const path = file(
      `${TOKENS}    - subjects: [ci]\n      tasks: everyone\n      metric: true\n      tools: { alow: ['*'] }\n`,
    );
    expect(problemsOf(['--config', path])).toEqual([
      'auth.rules[0].tasks: expected one of own, all, got "everyone" (line 6)',
      'auth.rules[0]: unknown key "metric" (did you mean "metrics"?) (line 7)',
      'auth.rules[0].tools: unknown key "alow" (did you mean "allow"?) (line 8)',
    ]);
  });
});
