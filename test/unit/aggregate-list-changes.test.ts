/**
 * The client's list_changed for several servers (issue 32): the changes within the window of the first are
 * one notification per kind, a change after it gets another, and nothing is sent once the client is gone.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ListChanges, type ListKind } from '../../src/aggregate/list-changes.js';

let sent: ListKind[];
let changes: ListChanges;
beforeEach(() => {
  vi.useFakeTimers();
  sent = [];
  changes = new ListChanges((kind) => sent.push(kind), 100);
});
afterEach(() => {
  changes.close();
  vi.useRealTimers();
});

describe('ListChanges (issue 32)', () => {
  it('sends one list_changed per kind for the changes within the window, once it is up', () => {
    changes.changed('tools');
    vi.advanceTimersByTime(60);
    changes.changed('tools');
    changes.changed('prompts');
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(40);
    expect(sent).toEqual(['tools']);
    vi.advanceTimersByTime(60);
    expect(sent).toEqual(['tools', 'prompts']);
  });

  it('sends another for a change after the last was sent: none is lost', () => {
    changes.changed('resources');
    vi.advanceTimersByTime(100);
    changes.changed('resources');
    vi.advanceTimersByTime(100);
    expect(sent).toEqual(['resources', 'resources']);
  });

  it('sends nothing once closed, for a change pending or made after', () => {
    changes.changed('tools');
    changes.close();
    changes.changed('prompts');
    vi.advanceTimersByTime(1_000);
    expect(sent).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
