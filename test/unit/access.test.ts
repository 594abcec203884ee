/**
 * auth.rules turned into one caller's rights (src/security/access.ts): which rules match it, and what
 * they grant together. The protocol behaviour is in in-process-access-rules.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { AccessRule } from '../../src/config/schema.js';
import { accessRules, callableTools } from '../../src/security/access.js';

const rights = (rules: AccessRule[], adminSubjects: string[] = []) => {
  const of = accessRules({ rules, adminSubjects });
  if (of === undefined) throw new Error('expected rights for these rules');
  return of;
};

describe('accessRules', () => {
  it('is none without rules: nothing is restricted', () => {
    expect(accessRules({ rules: [], adminSubjects: ['ops'] })).toBeUndefined();
  });

  it('matches by subject glob, by a group or role, by a scope; a caller no rule matches has no right', () => {
    const of = rights([
      { subjects: ['ci-*'], tools: { allow: ['build'], deny: [] } },
      { groups: ['operators'], tasks: 'all' },
      { scopes: ['mcp:metrics'], metrics: true },
    ]);
    expect(of({ subject: 'ci-bot' }).mayCall('build')).toBe(true);
    expect(of({ subject: 'cid' }).mayCall('build')).toBe(false);
    expect(of({ subject: 'olga', grant: { groups: ['operators'], scopes: [] } }).allTasks).toBe(true);
    expect(of({ subject: 'mon', grant: { groups: [], scopes: ['mcp:metrics'] } }).metrics).toBe(true);
    const nobody = of({ subject: 'x', grant: { groups: ['staff'], scopes: ['mcp:tools'] } });
    expect([
      nobody.mayCall('build'),
      nobody.allTasks,
      nobody.taskList,
      nobody.metrics,
      nobody.dashboard,
    ]).toEqual([false, false, false, false, false]);
  });

  it("grants the union of the matching rules, each rule's deny taking tools out of its own allow only", () => {
    const of = rights([
      { subjects: ['*'], tools: { allow: ['*'], deny: ['admin_*'] }, taskList: true },
      { groups: ['operators'], tools: { allow: ['admin_*'], deny: ['admin_wipe'] }, dashboard: true },
    ]);
    const alice = of({ subject: 'alice', grant: { groups: [], scopes: [] } });
    const olga = of({ subject: 'olga', grant: { groups: ['operators'], scopes: [] } });
    expect([alice.mayCall('echo'), alice.mayCall('admin_report')]).toEqual([true, false]);
    expect([olga.mayCall('echo'), olga.mayCall('admin_report'), olga.mayCall('admin_wipe')]).toEqual([
      true,
      true,
      false,
    ]);
    expect([olga.taskList, olga.dashboard, alice.dashboard]).toEqual([true, true, false]);
  });

  it('keeps granting the pages to adminSubjects', () => {
    const ops = rights([{ subjects: ['*'], taskList: true }], ['ops'])({ subject: 'ops' });
    expect([ops.metrics, ops.dashboard]).toEqual([true, true]);
  });
});

describe('callableTools', () => {
  const access = rights([{ subjects: ['*'], tools: { allow: ['echo'], deny: [] } }])({ subject: 'a' });

  it("leaves out the tools the caller may not call, and makes a public list this caller's own", () => {
    const page = {
      tools: [{ name: 'echo' }, { name: 'wipe' }],
      nextCursor: 'c',
      ttlMs: 60_000,
      cacheScope: 'public',
    };
    expect(callableTools(page, access)).toEqual({
      tools: [{ name: 'echo' }],
      nextCursor: 'c',
      ttlMs: 60_000,
      cacheScope: 'private',
    });
  });

  it('leaves a list alone when there are no rules', () => {
    const page = { tools: [{ name: 'wipe' }], cacheScope: 'public' };
    expect(callableTools(page, undefined)).toBe(page);
  });
});
