/** The decision table of DESIGN.md ("The three jobs, decided per session and per tool"), row by row. */
import { describe, expect, it } from 'vitest';
import type { TaskSupport } from '../../src/config/schema.js';
import { decideToolCall, type ToolCallFacts, type UpstreamTool } from '../../src/session/decide.js';

const PLAIN_UPSTREAM: UpstreamTool = { runsAsTask: false, requiresTask: false };
const NATIVE_OPTIONAL: UpstreamTool = { runsAsTask: true, requiresTask: false };
const NATIVE_REQUIRED: UpstreamTool = { runsAsTask: true, requiresTask: true };

const facts = (overrides: Partial<ToolCallFacts> & { taskSupport?: TaskSupport; unwrap?: boolean }) => ({
  asTask: overrides.asTask ?? false,
  clientHasTasks: overrides.clientHasTasks ?? true,
  upstream: overrides.upstream ?? PLAIN_UPSTREAM,
  policy: { taskSupport: overrides.taskSupport ?? 'optional', unwrap: overrides.unwrap ?? false },
});

describe('decideToolCall', () => {
  it.each([
    [
      'a task-aware client asks a task of a server without tasks: augment',
      facts({ asTask: true }),
      'augment',
    ],
    ['… and without one: the plain call', facts({}), 'forward'],
    [
      'a task-aware client, a tool the server runs as a task: pass through',
      facts({ asTask: true, upstream: NATIVE_OPTIONAL }),
      'forward',
    ],
    ['… called plainly, the server decides', facts({ upstream: NATIVE_REQUIRED }), 'forward'],
    [
      'a client without tasks, a tool the server requires as a task: unwrap',
      facts({ clientHasTasks: false, upstream: NATIVE_REQUIRED }),
      'unwrap',
    ],
    [
      '… one it only offers as a task, with the unwrap rule: unwrap',
      facts({ clientHasTasks: false, upstream: NATIVE_OPTIONAL, unwrap: true }),
      'unwrap',
    ],
    [
      '… without the rule: the plain call',
      facts({ clientHasTasks: false, upstream: NATIVE_OPTIONAL }),
      'forward',
    ],
    [
      'a client without tasks, a tool policy marks required: the plain call',
      facts({ clientHasTasks: false, taskSupport: 'required' }),
      'forward',
    ],
    [
      'a task-aware client calls a required tool plainly: refused',
      facts({ taskSupport: 'required' }),
      'refuse-plain',
    ],
    [
      'a task for a forbidden tool: refused',
      facts({ asTask: true, taskSupport: 'forbidden' }),
      'refuse-task',
    ],
    [
      'a task for a tool left to a server without tasks: refused',
      facts({ asTask: true, taskSupport: 'passthrough' }),
      'refuse-task',
    ],
  ] as const)('%s', (_, given, kind) => {
    expect(decideToolCall(given).kind).toBe(kind);
  });

  it('never unwraps for a client that can follow a task, nor serves one for a tool the server runs', () => {
    for (const asTask of [false, true])
      for (const clientHasTasks of [false, true])
        for (const upstream of [PLAIN_UPSTREAM, NATIVE_OPTIONAL, NATIVE_REQUIRED])
          for (const taskSupport of ['optional', 'required', 'forbidden', 'passthrough'] as const)
            for (const unwrap of [false, true]) {
              const plan = decideToolCall(facts({ asTask, clientHasTasks, upstream, taskSupport, unwrap }));
              if (clientHasTasks || asTask) expect(plan.kind).not.toBe('unwrap');
              if (upstream.runsAsTask) expect(['forward', 'unwrap']).toContain(plan.kind);
              if (!asTask) expect(['augment', 'refuse-task']).not.toContain(plan.kind);
            }
  });
});
