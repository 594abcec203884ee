import { describe, expect, it } from 'vitest';
import { UpstreamTaskWatch } from '../../src/tasks/upstream-tasks.js';

const CREATED = '2026-11-30T00:00:00.000Z';
const at = (iso: string): number => Date.parse(iso);
const task = (taskId: string, status: string, ttl: number | null = 60_000) => ({
  taskId,
  status,
  createdAt: CREATED,
  lastUpdatedAt: CREATED,
  ttl,
  pollInterval: 100,
});

describe('UpstreamTaskWatch', () => {
  it('fails the live tasks it saw when the upstream goes, and answers for them until their ttl ends', () => {
    const watch = new UpstreamTaskWatch();
    watch.saw(task('a', 'working'));
    watch.saw(task('b', 'input_required'));
    watch.saw(task('c', 'working'));
    watch.saw(task('c', 'completed')); // ended before the crash: the upstream's word stands
    const lost = watch.lose('Upstream server unavailable: gone', at('2026-11-30T00:00:10.000Z'));
    expect(lost.map((t) => [t.taskId, t.status])).toEqual([
      ['a', 'failed'],
      ['b', 'failed'],
    ]);
    expect(watch.lostTask('a', at('2026-11-30T00:00:20.000Z'))).toMatchObject({
      status: 'failed',
      statusMessage: 'Upstream server unavailable: gone',
      lastUpdatedAt: '2026-11-30T00:00:10.000Z',
      createdAt: CREATED,
    });
    expect(watch.lostTask('c')).toBeUndefined();
    expect(watch.lostTask('a', at('2026-11-30T00:01:00.000Z'))).toBeUndefined();
    // A second loss has nothing left to fail.
    expect(watch.lose('again')).toEqual([]);
  });

  it('lets go of a task whose outcome the client fetched, and of one whose ttl is over', () => {
    const watch = new UpstreamTaskWatch();
    watch.saw(task('fetched', 'working'));
    watch.ended('fetched');
    watch.saw(task('old', 'working', 1_000));
    expect(watch.lose('gone', at('2026-11-30T00:00:02.000Z'))).toEqual([]);
  });

  it('takes a new task with the id of a lost one (a restarted server counting again) for the new one', () => {
    const watch = new UpstreamTaskWatch();
    watch.saw(task('1', 'working'));
    watch.lose('gone', at('2026-11-30T00:00:01.000Z'));
    watch.saw(task('1', 'working'));
    expect(watch.lostTask('1', at('2026-11-30T00:00:02.000Z'))).toBeUndefined();
  });

  it('ignores what is not a task, and keeps a task without a ttl while there is room', () => {
    const watch = new UpstreamTaskWatch();
    for (const junk of [
      undefined,
      null,
      'x',
      { taskId: 1, status: 'working' },
      { taskId: 'z', status: 'odd' },
    ])
      watch.saw(junk);
    watch.saw(task('forever', 'working', null));
    expect(watch.lose('gone').map((t) => t.taskId)).toEqual(['forever']);
    expect(watch.lostTask('forever', at('2030-01-01T00:00:00.000Z'))).toMatchObject({ status: 'failed' });
    expect(watch.lostTask(42)).toBeUndefined();
  });
});
