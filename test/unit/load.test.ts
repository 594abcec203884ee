import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { problemsOf as refusedWith } from '../helpers/config-problems.js';

const problemsOf = (input: unknown): string[] => refusedWith(() => resolveConfig(input as ConfigInput));

describe('resolveConfig', () => {
  it('fills every default', () => {
    expect(resolveConfig({})).toEqual({
      shutdownGrace: 30_000,
      logLevel: 'info',
      maxMessageBytes: 32 * 1024 * 1024,
      tasks: {
        defaultTtl: 3_600_000,
        maxTtl: 86_400_000,
        pollInterval: 1_000,
        promoteAfter: 0,
        maxTasks: 10_000,
        maxResultBytes: 256 * 1024 * 1024,
        statusNotifications: true,
        exposeList: true,
        listPageSize: 100,
      },
      unwrap: { minPollInterval: 50, maxPollInterval: 5_000, keepAliveInterval: 15_000 },
      store: { keyPrefix: 'taskgate:', leaseTtl: 15_000, commandTimeout: 10_000 },
      clientTasks: true,
      upstreamRestart: { enabled: true, delay: 500, maxDelay: 30_000, holdRequests: 10_000 },
      admin: {},
      telemetry: { toolContent: false },
      auth: { tokens: [], adminSubjects: [], rules: [] },
      limits: {},
      audit: { enabled: true, logArguments: false },
      http: {
        path: '/mcp',
        allowedOrigins: [],
        maxSessions: 100,
        sessionIdleTimeout: 1_800_000,
        abandonedSessionTimeout: 60_000,
        eventLogSize: 1_000,
        eventLogBytes: 16 * 1024 * 1024,
        eventLogTotalBytes: 256 * 1024 * 1024,
      },
      tools: [],
    });
  });

  it('issue 14.2: applies no per-caller limit over stdio unless one is set, and the HTTP front’s otherwise', () => {
    expect(resolveConfig({ limits: { maxLiveTasks: 3 } }).limits).toEqual({ maxLiveTasks: 3 });
    // A rate and its burst are one bucket: the one not given keeps its HTTP-front default.
    expect(resolveConfig({ limits: { taskCreationRate: 5 } }).limits).toEqual({
      taskCreationRate: 5,
      taskCreationBurst: 1_000,
    });
    const http = resolveConfig({ http: { listen: '127.0.0.1:0' }, limits: { taskRequestBurst: 7 } });
    expect(http.limits).toEqual({
      maxLiveTasks: 1_000,
      taskCreationRate: 100,
      taskCreationBurst: 1_000,
      taskRequestRate: 1_000,
      taskRequestBurst: 7,
    });
  });

  it('issue 14.4: lists tasks by default over stdio, not on the HTTP front, unless told', () => {
    expect(resolveConfig({ http: { listen: '127.0.0.1:0' } }).tasks.exposeList).toBe(false);
    expect(resolveConfig({ tasks: { exposeList: false } }).tasks.exposeList).toBe(false);
    expect(
      resolveConfig({ http: { listen: '127.0.0.1:0' }, tasks: { exposeList: true } }).tasks.exposeList,
    ).toBe(true);
  });

  it('keeps given values and fills the rest', () => {
    const config = resolveConfig({
      tasks: { maxTasks: 5 },
      tools: [{ match: 'x' }],
      upstream: { command: 'node' },
    });
    expect(config.tasks).toMatchObject({ maxTasks: 5, defaultTtl: 3_600_000 });
    expect(config.tools).toEqual([{ match: 'x' }]);
    expect(config.upstream).toEqual({ command: 'node', args: [], sharing: 'session', poolSize: 4 });
  });

  it('refuses a negative ttl, naming its path', () => {
    const problems = problemsOf({ tasks: { defaultTtl: -1 } });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^tasks\.defaultTtl: /);
  });

  it('lists every problem, each with its path', () => {
    const problems = problemsOf({
      logLevel: 'loud',
      maxMessageBytes: 10,
      tasks: { defaultTtl: -1, maxTtl: 1.5, pollInterval: 0 },
      tools: [{ match: 'ok' }, { match: '', taskSupport: 'sometimes' }],
    });
    const paths = problems.map((problem) => problem.slice(0, problem.indexOf(':')));
    expect(paths.sort()).toEqual(
      [
        'logLevel',
        'maxMessageBytes',
        'tasks.defaultTtl',
        'tasks.maxTtl',
        'tasks.pollInterval',
        'tools[1].match',
        'tools[1].taskSupport',
      ].sort(),
    );
  });

  it('puts every problem in the error message', () => {
    let error: unknown;
    try {
      resolveConfig({ tasks: { maxTasks: 0 }, logLevel: 'loud' } as unknown as ConfigInput);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const { message, problems } = error as ConfigError;
    expect(problems).toHaveLength(2);
    for (const problem of problems) expect(message).toContain(problem);
  });

  it('refuses unknown keys, at the root and inside tasks and tools', () => {
    const problems = problemsOf({ extra: 1, tasks: { ttl: 5 }, tools: [{ match: 'x', mode: 'y' }] });
    expect(problems).toHaveLength(3);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\(root\): .*extra/),
        expect.stringMatching(/^tasks: .*ttl/),
        expect.stringMatching(/^tools\[0\]: .*mode/),
      ]),
    );
  });

  it('refuses a restart delay longer than its cap', () => {
    expect(problemsOf({ upstreamRestart: { delay: 5_000, maxDelay: 1_000 } })).toEqual([
      expect.stringMatching(
        /^upstreamRestart\.delay: delay \(500 ms unless set\) must not be longer than maxDelay/,
      ),
    ]);
  });

  it('refuses an upstream without a command', () => {
    expect(problemsOf({ upstream: { command: '' } })).toEqual([
      expect.stringMatching(/^upstream\.command: /),
    ]);
  });
});
