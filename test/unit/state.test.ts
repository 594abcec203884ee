import { TaskSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { IllegalTransitionError, StaleStatusError } from '../../src/tasks/state.js';
import {
  canTransition,
  isTerminal,
  toWireTask,
  transition,
  type TaskRecord,
  type TaskStatus,
} from '../../src/tasks/state.js';

const STATUSES: readonly TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/** The lifecycle as the spec states it (Task Status Lifecycle 2.1–2.3), written out independently of state.ts. */
const SPEC_NEXT: Record<TaskStatus, readonly TaskStatus[]> = {
  working: ['input_required', 'completed', 'failed', 'cancelled'],
  input_required: ['working', 'completed', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

const clause = (from: TaskStatus): string =>
  from === 'working' ? '2.1' : from === 'input_required' ? '2.2' : '2.3';

const PAIRS = STATUSES.flatMap((from) =>
  STATUSES.map((to) => ({ from, to, allowed: SPEC_NEXT[from].includes(to), clause: clause(from) })),
);

const CREATED = Date.UTC(2025, 10, 25, 10, 30, 0);

function record(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: '786512e2-9e0d-44bd-8f29-789f320fe840',
    status: 'working',
    createdAt: CREATED,
    lastUpdatedAt: CREATED,
    ttl: 60_000,
    pollInterval: 5_000,
    owner: 'owner-1',
    identity: 'alice',
    sessionId: 'session-1',
    toolName: 'get_weather',
    outcomeBytes: 0,
    ...overrides,
  };
}

describe('task state machine', () => {
  it('covers all 25 status pairs, 8 of them allowed', () => {
    expect(PAIRS).toHaveLength(25);
    expect(PAIRS.filter((pair) => pair.allowed)).toHaveLength(8);
  });

  for (const { from, to, clause } of PAIRS.filter((pair) => pair.allowed)) {
    describe(`${from} → ${to} is allowed (spec: Task Status Lifecycle ${clause})`, () => {
      it('canTransition says yes', () => {
        expect(canTransition(from, to)).toBe(true);
      });

      it('transition returns a record in the new status', () => {
        const next = transition(record({ status: from }), { status: to }, CREATED + 1_000);
        expect(next.status).toBe(to);
      });
    });
  }

  for (const { from, to, clause } of PAIRS.filter((pair) => !pair.allowed)) {
    describe(`${from} → ${to} is forbidden (spec: Task Status Lifecycle ${clause})`, () => {
      it('canTransition says no', () => {
        expect(canTransition(from, to)).toBe(false);
      });

      it('transition throws IllegalTransitionError naming both statuses and leaves the record alone', () => {
        const before = record({ status: from, statusMessage: 'as it was' });
        const snapshot = structuredClone(before);
        let thrown: unknown;
        try {
          transition(before, { status: to, statusMessage: 'changed' }, CREATED + 1_000);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(IllegalTransitionError);
        const illegal = thrown as IllegalTransitionError;
        expect([illegal.taskId, illegal.from, illegal.to]).toEqual([before.taskId, from, to]);
        expect(before).toEqual(snapshot);
      });
    });
  }

  it.each(STATUSES)(
    'isTerminal(%s) is true exactly for completed, failed and cancelled (spec: Task Status Lifecycle 2.3)',
    (status) => {
      expect(isTerminal(status)).toBe(['completed', 'failed', 'cancelled'].includes(status));
    },
  );

  it('a terminal status has no way out at all (spec: Task Status Lifecycle 2.3)', () => {
    for (const from of STATUSES.filter(isTerminal)) {
      expect(STATUSES.filter((to) => canTransition(from, to))).toEqual([]);
    }
  });
});

describe('transition', () => {
  it('keeps createdAt and every other field, and moves lastUpdatedAt to now', () => {
    const before = record();
    const next = transition(before, { status: 'input_required' }, CREATED + 7_000);
    expect(next).toEqual({ ...before, status: 'input_required', lastUpdatedAt: CREATED + 7_000 });
    expect(next.createdAt).toBe(CREATED);
  });

  it('never moves lastUpdatedAt backwards when the clock does', () => {
    const before = record({ lastUpdatedAt: CREATED + 5_000 });
    expect(transition(before, { status: 'completed' }, CREATED + 1_000).lastUpdatedAt).toBe(CREATED + 5_000);
  });

  it('returns a new record and does not mutate its input', () => {
    const before = record({ statusMessage: 'old' });
    const snapshot = structuredClone(before);
    const next = transition(
      before,
      { status: 'completed', outcome: { result: { content: [] } }, outcomeBytes: 14 },
      CREATED + 1,
    );
    expect(next).not.toBe(before);
    expect(before).toEqual(snapshot);
  });

  it('sets statusMessage when the change has one', () => {
    const next = transition(
      record(),
      { status: 'failed', statusMessage: 'Tool call failed: boom' },
      CREATED + 1,
    );
    expect(next.statusMessage).toBe('Tool call failed: boom');
  });

  it('clears a previous statusMessage when the change has none', () => {
    const next = transition(
      record({ status: 'input_required', statusMessage: 'waiting for the user' }),
      { status: 'working' },
      CREATED + 1,
    );
    expect(next).not.toHaveProperty('statusMessage');
  });

  it('stores the outcome and its byte size', () => {
    const outcome = { result: { content: [{ type: 'text', text: 'done' }], isError: false } };
    const next = transition(record(), { status: 'completed', outcome, outcomeBytes: 123 }, CREATED + 1);
    expect(next.outcome).toEqual(outcome);
    expect(next.outcomeBytes).toBe(123);
  });

  it('stores an error outcome', () => {
    const outcome = { error: { code: -32602, message: 'bad arguments', data: { field: 'city' } } };
    const next = transition(record(), { status: 'failed', outcome, outcomeBytes: 60 }, CREATED + 1);
    expect(next.outcome).toEqual(outcome);
  });

  it('counts an outcome given without a size as 0 bytes', () => {
    const next = transition(
      record({ outcomeBytes: 99 }),
      { status: 'completed', outcome: { result: {} } },
      CREATED,
    );
    expect(next.outcomeBytes).toBe(0);
  });

  it('adds no outcome when the change has none', () => {
    const next = transition(record(), { status: 'cancelled' }, CREATED + 1);
    expect(next).not.toHaveProperty('outcome');
    expect(next.outcomeBytes).toBe(0);
  });

  it('issue 15: a change that expects the status the task is in is applied', () => {
    const next = transition(record(), { from: 'working', status: 'input_required' }, CREATED + 1);
    expect(next.status).toBe('input_required');
    expect(next).not.toHaveProperty('from');
  });

  it('issue 15: a change that expects another status throws StaleStatusError, even where the table allows the move', () => {
    const asking = record({ status: 'input_required' });
    let thrown: unknown;
    try {
      transition(asking, { from: 'working', status: 'completed' }, CREATED + 1);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(StaleStatusError);
    expect(thrown).toMatchObject({ expected: 'working', actual: 'input_required', to: 'completed' });
    expect(asking.status).toBe('input_required');
  });
});

describe('toWireTask', () => {
  const ISO_8601_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

  it('renders createdAt and lastUpdatedAt as ISO 8601 timestamps (spec: TTL and Resource Management 1, 2)', () => {
    const wire = toWireTask(record({ lastUpdatedAt: CREATED + 600_000 }));
    expect(wire.createdAt).toMatch(ISO_8601_UTC);
    expect(wire.lastUpdatedAt).toMatch(ISO_8601_UTC);
    expect(Date.parse(wire.createdAt as string)).toBe(CREATED);
    expect(Date.parse(wire.lastUpdatedAt as string)).toBe(CREATED + 600_000);
  });

  it('includes the actual ttl and the pollInterval (spec: TTL and Resource Management 4, 6)', () => {
    const wire = toWireTask(record({ ttl: 30_000, pollInterval: 2_500 }));
    expect(wire.ttl).toBe(30_000);
    expect(wire.pollInterval).toBe(2_500);
  });

  it('has exactly the Task fields, and statusMessage only when set', () => {
    expect(Object.keys(toWireTask(record())).sort()).toEqual(
      ['createdAt', 'lastUpdatedAt', 'pollInterval', 'status', 'taskId', 'ttl'].sort(),
    );
    expect(toWireTask(record({ statusMessage: 'The operation is now in progress.' }))).toEqual({
      taskId: '786512e2-9e0d-44bd-8f29-789f320fe840',
      status: 'working',
      statusMessage: 'The operation is now in progress.',
      createdAt: '2025-11-25T10:30:00.000Z',
      lastUpdatedAt: '2025-11-25T10:30:00.000Z',
      ttl: 60_000,
      pollInterval: 5_000,
    });
  });

  it('leaks no internal field (owner, identity, sessionId, toolName, outcome, outcomeBytes)', () => {
    const wire = toWireTask(
      record({
        status: 'completed',
        outcome: { result: { content: [{ type: 'text', text: 'secret' }] } },
        outcomeBytes: 50,
      }),
    );
    for (const field of ['owner', 'identity', 'sessionId', 'toolName', 'outcome', 'outcomeBytes']) {
      expect(wire).not.toHaveProperty(field);
    }
    expect(JSON.stringify(wire)).not.toContain('secret');
  });

  it.each(STATUSES)('a %s task passes the SDK Task schema with no extra keys', (status) => {
    const wire = toWireTask(record({ status, statusMessage: 'note' }));
    expect(TaskSchema.strict().parse(wire)).toEqual(wire);
  });
});
