/** The decision table of docs/design.md ("The three jobs, decided per session and per tool"), row by row, for both eras. */
import { describe, expect, it } from 'vitest';
import type { TaskSupport } from '../../src/config/schema.js';
import {
  decideToolCall,
  type ToolCallFacts,
  type ToolCallPlan,
  type UpstreamTool,
} from '../../src/session/decide.js';

const PLAIN_UPSTREAM: UpstreamTool = { listedAsTask: false, mayRunAsTask: false, requiresTask: false };
const NATIVE_OPTIONAL: UpstreamTool = { listedAsTask: true, mayRunAsTask: true, requiresTask: false };
const NATIVE_REQUIRED: UpstreamTool = { listedAsTask: true, mayRunAsTask: true, requiresTask: true };
/** A tool that an upstream with tasks has not listed yet. */
const NATIVE_UNLISTED: UpstreamTool = { listedAsTask: false, mayRunAsTask: true, requiresTask: false };
const UPSTREAMS = [PLAIN_UPSTREAM, NATIVE_OPTIONAL, NATIVE_REQUIRED, NATIVE_UNLISTED];
const SUPPORTS = ['optional', 'required', 'forbidden', 'passthrough'] as const;

interface Given {
  asTask?: boolean;
  clientHasTasks?: boolean;
  upstream?: UpstreamTool;
  taskSupport?: TaskSupport;
  unwrap?: boolean;
  promoteAfter?: number;
}
/** A 2025-11-25 client's call: the client decides, by `task`. */
const facts = (given: Given): ToolCallFacts => ({
  taskDecidedBy: 'client',
  canTakeTask: given.clientHasTasks ?? true,
  asksTask: given.asTask ?? false,
  upstream: given.upstream ?? PLAIN_UPSTREAM,
  policy: {
    taskSupport: given.taskSupport ?? 'optional',
    unwrap: given.unwrap ?? false,
    promoteAfter: given.promoteAfter ?? 0,
  },
});
/** A 2026-07-28 request's call: the server decides, for a request with the tasks extension (`extension`). */
const modern = (given: Omit<Given, 'asTask' | 'clientHasTasks'> & { extension: boolean }): ToolCallFacts => ({
  ...facts(given),
  taskDecidedBy: 'server',
  canTakeTask: given.extension,
});

const ROWS: [string, Given, ToolCallPlan['kind']][] = [
  ['a task-aware client asks a task of a server without tasks: augment', { asTask: true }, 'augment'],
  ['… and without one: the plain call', {}, 'forward'],
  [
    'a task-aware client, a tool the server runs as a task: pass through',
    { asTask: true, upstream: NATIVE_OPTIONAL },
    'forward',
  ],
  ['… called plainly, the server decides', { upstream: NATIVE_REQUIRED }, 'forward'],
  [
    'a task for a tool a server with tasks has not listed yet: pass through',
    { asTask: true, upstream: NATIVE_UNLISTED },
    'forward',
  ],
  [
    'a client without tasks, a tool the server requires as a task: unwrap',
    { clientHasTasks: false, upstream: NATIVE_REQUIRED },
    'unwrap',
  ],
  [
    '… one it offers as a task, with the unwrap rule: unwrap',
    { clientHasTasks: false, upstream: NATIVE_OPTIONAL, unwrap: true },
    'unwrap',
  ],
  ['… without the rule: the plain call', { clientHasTasks: false, upstream: NATIVE_OPTIONAL }, 'forward'],
  [
    '… one it has not listed yet, even with the rule: the plain call',
    { clientHasTasks: false, upstream: NATIVE_UNLISTED, unwrap: true },
    'forward',
  ],
  [
    'a client without tasks, a tool policy marks required: the plain call',
    { clientHasTasks: false, taskSupport: 'required' },
    'forward',
  ],
  ['a task-aware client calls a required tool plainly: refused', { taskSupport: 'required' }, 'refuse-plain'],
  ['a task for a forbidden tool: refused', { asTask: true, taskSupport: 'forbidden' }, 'refuse-task'],
  [
    'a task for a tool left to a server without tasks: refused',
    { asTask: true, taskSupport: 'passthrough' },
    'refuse-task',
  ],
];

describe('decideToolCall, a 2025-11-25 call: the client decides', () => {
  it.each(ROWS)('%s', (_, given, kind) => {
    expect(decideToolCall(facts(given)).kind).toBe(kind);
  });

  it('never unwraps for a client that can follow a task, nor serves one for a tool the server runs', () => {
    for (const asTask of [false, true])
      for (const clientHasTasks of [false, true])
        for (const upstream of UPSTREAMS)
          for (const taskSupport of SUPPORTS)
            for (const unwrap of [false, true]) {
              const plan = decideToolCall(facts({ asTask, clientHasTasks, upstream, taskSupport, unwrap }));
              if (clientHasTasks || asTask) expect(plan.kind).not.toBe('unwrap');
              if (upstream.mayRunAsTask) expect(['forward', 'unwrap']).toContain(plan.kind);
              if (!asTask) expect(['augment', 'refuse-task']).not.toContain(plan.kind);
            }
  });
});

describe('decideToolCall, a 2026-07-28 call: the tasks extension lets the server decide', () => {
  it('never a task for a client without the extension, whatever the tool', () => {
    for (const taskSupport of SUPPORTS) {
      for (const promoteAfter of [0, 500]) {
        for (const upstream of UPSTREAMS) {
          const plan = decideToolCall(modern({ extension: false, taskSupport, upstream, promoteAfter }));
          expect(plan).not.toHaveProperty('task');
          // Only a task could serve a tool the operator requires: -32021; one the upstream requires is unwrapped.
          if (taskSupport === 'required' && !upstream.mayRunAsTask) {
            expect(plan).toEqual({ kind: 'refuse-plain', missing: 'extension' });
          } else {
            expect(plan).toEqual({ kind: upstream.requiresTask ? 'unwrap' : 'forward' });
          }
        }
      }
    }
  });

  it('with the extension: forbidden plain, required a task at once, optional by promoteAfter', () => {
    const ext = (taskSupport: TaskSupport, promoteAfter: number) =>
      decideToolCall(modern({ extension: true, taskSupport, promoteAfter }));
    expect(ext('forbidden', 0)).toEqual({ kind: 'forward' });
    expect(ext('passthrough', 500)).toEqual({ kind: 'forward' });
    expect(ext('required', 0)).toEqual({ kind: 'augment', task: { promoteAfterMs: undefined } });
    expect(ext('required', 500)).toEqual({ kind: 'augment', task: { promoteAfterMs: undefined } });
    expect(ext('optional', 0)).toEqual({ kind: 'augment', task: { promoteAfterMs: undefined } });
    expect(ext('optional', 500)).toEqual({ kind: 'augment', task: { promoteAfterMs: 500 } });
  });
});

const AT_ONCE = { promoteAfterMs: undefined };

/**
 * Every branch of decideToolCall, in both eras, with the whole plan it gives: removing any branch (or
 * letting one era take the other's) changes at least one row.
 */
const BOTH_ERAS: [string, ToolCallFacts, ToolCallPlan][] = [
  // The client decides (2025-11-25).
  [
    '2025, task asked, upstream task',
    facts({ asTask: true, upstream: NATIVE_REQUIRED }),
    { kind: 'forward', task: AT_ONCE },
  ],
  [
    '2025, task asked, forbidden',
    facts({ asTask: true, taskSupport: 'forbidden' }),
    { kind: 'refuse-task', taskSupport: 'forbidden' },
  ],
  [
    '2025, task asked, passthrough',
    facts({ asTask: true, taskSupport: 'passthrough' }),
    { kind: 'refuse-task', taskSupport: 'passthrough' },
  ],
  [
    '2025, task asked, promoteAfter ignored',
    facts({ asTask: true, promoteAfter: 500 }),
    { kind: 'augment', task: AT_ONCE },
  ],
  [
    '2025, task asked without the capability',
    facts({ asTask: true, clientHasTasks: false }),
    { kind: 'augment', task: AT_ONCE },
  ],
  [
    '2025, no tasks, upstream requires',
    facts({ clientHasTasks: false, upstream: NATIVE_REQUIRED }),
    { kind: 'unwrap' },
  ],
  [
    '2025, no tasks, unwrap rule',
    facts({ clientHasTasks: false, upstream: NATIVE_OPTIONAL, unwrap: true }),
    { kind: 'unwrap' },
  ],
  [
    '2025, tasks, unwrap rule: plain',
    facts({ upstream: NATIVE_OPTIONAL, unwrap: true }),
    { kind: 'forward' },
  ],
  [
    '2025, plain, upstream task, required',
    facts({ upstream: NATIVE_OPTIONAL, taskSupport: 'required' }),
    { kind: 'forward' },
  ],
  ['2025, plain, optional', facts({ promoteAfter: 500 }), { kind: 'forward' }],
  ['2025, plain, required', facts({ taskSupport: 'required' }), { kind: 'refuse-plain', missing: 'task' }],
  [
    '2025, no tasks, required',
    facts({ clientHasTasks: false, taskSupport: 'required' }),
    { kind: 'forward' },
  ],
  // The server decides (2026-07-28).
  [
    '2026, extension, upstream requires',
    modern({ extension: true, upstream: NATIVE_REQUIRED, promoteAfter: 500 }),
    { kind: 'forward', task: AT_ONCE },
  ],
  [
    '2026, extension, upstream optional',
    modern({ extension: true, upstream: NATIVE_OPTIONAL, promoteAfter: 500 }),
    { kind: 'forward', task: { promoteAfterMs: 500 } },
  ],
  [
    '2026, extension, upstream optional, operator required',
    modern({ extension: true, upstream: NATIVE_OPTIONAL, taskSupport: 'required', promoteAfter: 500 }),
    { kind: 'forward', task: { promoteAfterMs: 500 } },
  ],
  [
    '2026, extension, upstream optional, operator forbidden',
    modern({ extension: true, upstream: NATIVE_UNLISTED, taskSupport: 'forbidden' }),
    { kind: 'forward', task: AT_ONCE },
  ],
  [
    '2026, extension, forbidden',
    modern({ extension: true, taskSupport: 'forbidden', promoteAfter: 500 }),
    { kind: 'forward' },
  ],
  [
    '2026, extension, passthrough',
    modern({ extension: true, taskSupport: 'passthrough' }),
    { kind: 'forward' },
  ],
  [
    '2026, extension, optional, promoteAfter',
    modern({ extension: true, promoteAfter: 500 }),
    { kind: 'augment', task: { promoteAfterMs: 500 } },
  ],
  ['2026, extension, optional, at once', modern({ extension: true }), { kind: 'augment', task: AT_ONCE }],
  [
    '2026, extension, required',
    modern({ extension: true, taskSupport: 'required', promoteAfter: 500 }),
    { kind: 'augment', task: AT_ONCE },
  ],
  [
    '2026, extension, unwrap rule: a task, not unwrapped',
    modern({ extension: true, upstream: NATIVE_OPTIONAL, unwrap: true }),
    { kind: 'forward', task: AT_ONCE },
  ],
  [
    '2026, no extension, upstream requires',
    modern({ extension: false, upstream: NATIVE_REQUIRED }),
    { kind: 'unwrap' },
  ],
  [
    '2026, no extension, unwrap rule',
    modern({ extension: false, upstream: NATIVE_OPTIONAL, unwrap: true }),
    { kind: 'unwrap' },
  ],
  [
    '2026, no extension, upstream optional',
    modern({ extension: false, upstream: NATIVE_OPTIONAL }),
    { kind: 'forward' },
  ],
  [
    '2026, no extension, upstream optional, operator required',
    modern({ extension: false, upstream: NATIVE_UNLISTED, taskSupport: 'required' }),
    { kind: 'forward' },
  ],
  ['2026, no extension, optional', modern({ extension: false, promoteAfter: 500 }), { kind: 'forward' }],
  [
    '2026, no extension, required',
    modern({ extension: false, taskSupport: 'required' }),
    { kind: 'refuse-plain', missing: 'extension' },
  ],
];

describe('decideToolCall across both eras: every branch, the whole plan', () => {
  it.each(BOTH_ERAS)('%s', (_, given, plan) => {
    expect(decideToolCall(given)).toEqual(plan);
  });

  it('a 2026-07-28 call never asks for a task: `task` is read only where the client decides', () => {
    for (const extension of [false, true]) {
      const given = modern({ extension, taskSupport: 'forbidden' });
      expect(decideToolCall({ ...given, asksTask: true })).toEqual(decideToolCall(given));
    }
  });
});
