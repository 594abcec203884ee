import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { Policy, unmatchedRules } from '../../src/config/policy.js';

describe('rules that name a tool the upstream does not have', () => {
  const rules = [
    { match: 'serach' },
    { match: 'search' },
    { match: 'slow_*' },
    { match: 'tool?' },
    { match: 'nothing_like_it' },
  ];

  it('are the rules without a wildcard that name no listed tool', () => {
    expect(unmatchedRules(rules, ['search', 'fetch'])).toEqual([
      { match: 'serach' },
      { match: 'nothing_like_it' },
    ]);
    expect(unmatchedRules(rules, ['search', 'serach', 'nothing_like_it'])).toEqual([]);
    expect(unmatchedRules([], ['search'])).toEqual([]);
  });

  it('are warned about once per Policy, with the closest tool name', () => {
    const policy = new Policy(resolveConfig({ tools: rules }));
    const warnings: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => void warnings.push(args) };
    policy.warnUnmatchedRules(['search', 'fetch'], logger);
    policy.warnUnmatchedRules(['fetch'], logger);
    expect(warnings).toEqual([
      [
        { rule: 'serach' },
        'the tools rule for "serach" has no effect: the upstream has no tool of that name (did you mean "search"?)',
      ],
      [
        { rule: 'nothing_like_it' },
        'the tools rule for "nothing_like_it" has no effect: the upstream has no tool of that name',
      ],
    ]);
  });
});
