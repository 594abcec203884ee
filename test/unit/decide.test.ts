/** The decision table of docs/design.md ("The three jobs, decided per session and per tool"), row by row. */
import { describe, expect, it } from 'vitest';
import type { TaskSupport } from '../../src/config/schema.js';
import {
  decideModernToolCall,
  decideToolCall,
  type ToolCallFacts,
  type UpstreamTool,
} from '../../src/session/decide.js';

const PLAIN_UPSTREAM: UpstreamTool = { listedAsTask: false, mayRunAsTask: false, requiresTask: false };
const NATIVE_OPTIONAL: UpstreamTool = { listedAsTask: true, mayRunAsTask: true, requiresTask: false };
const NATIVE_REQUIRED: UpstreamTool = { listedAsTask: true, mayRunAsTask: true, requiresTask: true };
/** A tool that an upstream with tasks has not listed yet. */
const NATIVE_UNLISTED: UpstreamTool = { listedAsTask: false, mayRunAsTask: true, requiresTask: false };

type Given = Partial<Omit<ToolCallFacts, 'policy'>> & { taskSupport?: TaskSupport; unwrap?: boolean };
const facts = (given: Given): ToolCallFacts => ({
  asTask: given.asTask ?? false,
  clientHasTasks: given.clientHasTasks ?? true,
  upstream: given.upstream ?? PLAIN_UPSTREAM,
  policy: { taskSupport: given.taskSupport ?? 'optional', unwrap: given.unwrap ?? false },
});

const ROWS: [string, Given, ReturnType<typeof decideToolCall>['kind']][] = [
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

describe('decideToolCall', () => {
  it.each(ROWS)('%s', (_, given, kind) => {
    expect(decideToolCall(facts(given)).kind).toBe(kind);
  });

  it('never unwraps for a client that can follow a task, nor serves one for a tool the server runs', () => {
    for (const asTask of [false, true])
      for (const clientHasTasks of [false, true])
        for (const upstream of [PLAIN_UPSTREAM, NATIVE_OPTIONAL, NATIVE_REQUIRED, NATIVE_UNLISTED])
          for (const taskSupport of ['optional', 'required', 'forbidden', 'passthrough'] as const)
            for (const unwrap of [false, true]) {
              const plan = decideToolCall(facts({ asTask, clientHasTasks, upstream, taskSupport, unwrap }));
              if (clientHasTasks || asTask) expect(plan.kind).not.toBe('unwrap');
              if (upstream.mayRunAsTask) expect(['forward', 'unwrap']).toContain(plan.kind);
              if (!asTask) expect(['augment', 'refuse-task']).not.toContain(plan.kind);
            }
  });
});

describe('decideModernToolCall: the tasks extension lets the server decide', () => {
  const SUPPORTS = ['required', 'optional', 'forbidden'] as const;
  it('never a task for a client without the extension, whatever the tool', () => {
    for (const taskSupport of SUPPORTS) {
      for (const promoteAfterMs of [0, 500]) {
        for (const upstreamTask of [false, true]) {
          const plan = decideModernToolCall({ extension: false, taskSupport, upstreamTask, promoteAfterMs });
          // Only a task could serve a tool the operator requires: -32021; one the upstream requires is unwrapped.
          const refused = taskSupport === 'required' && !upstreamTask;
          expect(plan).toEqual({ kind: refused ? 'refuse' : 'plain' });
        }
      }
    }
  });

  it('with the extension: forbidden plain, required a task at once, optional by promoteAfter', () => {
    const ext = (taskSupport: (typeof SUPPORTS)[number], promoteAfterMs: number) =>
      decideModernToolCall({ extension: true, taskSupport, upstreamTask: false, promoteAfterMs });
    expect(ext('forbidden', 0)).toEqual({ kind: 'plain' });
    expect(ext('required', 0)).toEqual({ kind: 'task' });
    expect(ext('required', 500)).toEqual({ kind: 'task' });
    expect(ext('optional', 0)).toEqual({ kind: 'task' });
    expect(ext('optional', 500)).toEqual({ kind: 'promote', afterMs: 500 });
  });
});
