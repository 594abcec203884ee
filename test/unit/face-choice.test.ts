import { describe, expect, it } from 'vitest';
import { legacyFaceNeeded } from '../../src/modern/era.js';

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

describe('legacyFaceNeeded: which face of a dual-era server a 2025 session gets', () => {
  it.each([
    ['the 2026 face has all of it', {}, { tools: {}, logging: {} }, { tools: {}, logging: {} }, undefined],
    ['a capability the 2026 face lacks', {}, { tools: {} }, { tools: {}, logging: {} }, 'logging'],
    [
      'a part of one the 2026 face lacks',
      {},
      { resources: {} },
      { resources: { subscribe: true, listChanged: false } },
      'resources.subscribe',
    ],
    [
      '2025 tasks the 2026 face has as the extension',
      {},
      { tools: {}, ...TASKS },
      { tasks: { list: {} } },
      undefined,
    ],
    ['2025 tasks the 2026 face has not', {}, { tools: {} }, { tools: {}, tasks: { list: {} } }, 'tasks'],
    [
      'a task client, where only the 2026 face runs tasks',
      { tasks: {} },
      { tools: {}, ...TASKS },
      { tools: {}, logging: {} },
      undefined,
    ],
  ])('%s', (_case, client, modern, legacy, expected) => {
    expect(legacyFaceNeeded(client, modern, legacy)).toBe(expected);
  });
});
