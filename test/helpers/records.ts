import type { TaskRecord } from '../../src/tasks/state.js';

/** A working task record with plain defaults, for tests of what consumes records. */
export function taskRecord(overrides: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: '0f3a9c1e-0000-4000-8000-000000000000',
    status: 'working',
    createdAt: 1_000,
    lastUpdatedAt: 1_000,
    ttl: 60_000,
    pollInterval: 1_000,
    owner: 'o',
    sessionId: 's',
    toolName: 'slow',
    outcomeBytes: 0,
    ...overrides,
  };
}
