import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/load.js';
import { globToRegExp, MIN_TTL_MS, Policy } from '../../src/config/policy.js';
import type { ConfigInput } from '../../src/config/schema.js';

const policyOf = (input: ConfigInput): Policy => new Policy(resolveConfig(input));

describe('globToRegExp', () => {
  it.each([
    ['slow_*', 'slow_', true],
    ['slow_*', 'slow_query', true],
    ['slow_*', 'slow', false],
    ['slow_*', 'very_slow_query', false],
    ['*_search', 'web_search', true],
    ['*', '', true],
    ['*', 'anything at all', true],
    ['a*b*c', 'a-x-b-y-c', true],
    ['a*b*c', 'a-x-c', false],
    ['tool?', 'tool1', true],
    ['tool?', 'tool', false],
    ['tool?', 'tool12', false],
    ['??', 'ab', true],
    ['??', 'abc', false],
    ['exact', 'exact', true],
    ['exact', 'exactly', false],
    ['exact', 'inexact', false],
  ])('%j matching %j is %s', (glob, name, matches) => {
    expect(globToRegExp(glob).test(name)).toBe(matches);
  });

  it.each([
    ['a.b', 'a.b', 'axb'],
    ['x+y', 'x+y', 'xxy'],
    ['a^b', 'a^b', 'b'],
    ['cost$', 'cost$', 'cost'],
    ['f(x)', 'f(x)', 'fx'],
    ['[ab]', '[ab]', 'a'],
    ['a{2}', 'a{2}', 'aa'],
    ['a|b', 'a|b', 'a'],
    ['back\\slash', 'back\\slash', 'backslash'],
    ['a.*', 'a.anything', 'ab'],
  ])('treats the metacharacters in %j literally', (glob, literal, other) => {
    const pattern = globToRegExp(glob);
    expect(pattern.test(literal)).toBe(true);
    expect(pattern.test(other)).toBe(false);
  });
});

describe('Policy.forTool', () => {
  it('gives every tool the defaults when there are no rules (spec: Tool-level negotiation)', () => {
    const policy = policyOf({ tasks: { defaultTtl: 60_000, maxTtl: 120_000, pollInterval: 2_000 } });
    expect(policy.forTool('anything')).toEqual({
      taskSupport: 'optional',
      defaultTtl: 60_000,
      maxTtl: 120_000,
      pollInterval: 2_000,
      unwrap: false,
      promoteAfter: 0,
    });
  });

  it('applies the first rule that matches, not a later one', () => {
    const policy = policyOf({
      tools: [
        { match: 'slow_*', taskSupport: 'required' },
        { match: 'slow_fast', taskSupport: 'forbidden' },
        { match: '*', taskSupport: 'forbidden' },
      ],
    });
    expect(policy.forTool('slow_fast').taskSupport).toBe('required');
    expect(policy.forTool('slow_query').taskSupport).toBe('required');
    expect(policy.forTool('quick').taskSupport).toBe('forbidden');
  });

  it('fills what the matching rule leaves out from the defaults', () => {
    const policy = policyOf({
      tasks: { defaultTtl: 60_000, maxTtl: 600_000, pollInterval: 2_000, promoteAfter: 250 },
      tools: [{ match: 'report', pollInterval: 30_000 }],
    });
    expect(policy.forTool('report')).toEqual({
      taskSupport: 'optional',
      defaultTtl: 60_000,
      maxTtl: 600_000,
      pollInterval: 30_000,
      unwrap: false,
      promoteAfter: 250,
    });
  });

  it('takes ttl, maxTtl, pollInterval, immediateResponse, timeout, unwrap and promoteAfter from the rule', () => {
    const policy = policyOf({
      tools: [
        {
          match: 'render_*',
          taskSupport: 'required',
          ttl: 90_000,
          maxTtl: 300_000,
          pollInterval: 5_000,
          immediateResponse: 'Rendering started.',
          timeout: 120_000,
          unwrap: true,
          promoteAfter: 2_000,
        },
      ],
    });
    expect(policy.forTool('render_video')).toEqual({
      taskSupport: 'required',
      defaultTtl: 90_000,
      maxTtl: 300_000,
      pollInterval: 5_000,
      immediateResponse: 'Rendering started.',
      timeout: 120_000,
      unwrap: true,
      promoteAfter: 2_000,
    });
    expect(policy.forTool('other')).not.toHaveProperty('immediateResponse');
  });

  it('clamps a default ttl above the maximum to the maximum (spec: Resource Management 1.2)', () => {
    const policy = policyOf({
      tasks: { defaultTtl: 3_600_000, maxTtl: 60_000 },
      tools: [{ match: 'long', ttl: 500_000, maxTtl: 100_000 }],
    });
    expect(policy.forTool('any').defaultTtl).toBe(60_000);
    expect(policy.forTool('long').defaultTtl).toBe(100_000);
  });

  it('matches tool names with metacharacters literally', () => {
    const policy = policyOf({ tools: [{ match: 'fs.read', taskSupport: 'forbidden' }] });
    expect(policy.forTool('fs.read').taskSupport).toBe('forbidden');
    expect(policy.forTool('fsxread').taskSupport).toBe('optional');
  });

  it('answers the same for the same tool every time', () => {
    const policy = policyOf({ tools: [{ match: 'a?', taskSupport: 'required' }] });
    const first = policy.forTool('ab');
    expect(policy.forTool('ab')).toEqual(first);
    expect(policy.forTool('abc').taskSupport).toBe('optional');
    expect(policy.forTool('ab')).toEqual(first);
  });
});

describe('Policy.ttlFor', () => {
  const policy = policyOf({ tasks: { defaultTtl: 60_000, maxTtl: 600_000 } });
  const tool = policy.forTool('t');

  it('uses the default ttl when none is requested (spec: TTL and Resource Management 3)', () => {
    expect(policy.ttlFor(tool, undefined)).toBe(60_000);
  });

  it('grants a requested ttl within the maximum', () => {
    expect(policy.ttlFor(tool, 5_000)).toBe(5_000);
    expect(policy.ttlFor(tool, 600_000)).toBe(600_000);
  });

  it('clamps a requested ttl to the maximum (spec: TTL and Resource Management 3; Resource Management 1.2)', () => {
    expect(policy.ttlFor(tool, 600_001)).toBe(600_000);
    expect(policy.ttlFor(tool, Number.MAX_SAFE_INTEGER)).toBe(600_000);
  });

  it(`never grants less than MIN_TTL_MS (${MIN_TTL_MS} ms), so the task can still be read`, () => {
    expect(policy.ttlFor(tool, MIN_TTL_MS - 1)).toBe(MIN_TTL_MS);
    expect(policy.ttlFor(tool, 1)).toBe(MIN_TTL_MS);
    expect(policy.ttlFor(tool, 0)).toBe(MIN_TTL_MS);
    expect(policy.ttlFor(tool, MIN_TTL_MS + 1)).toBe(MIN_TTL_MS + 1);
  });

  it("uses the tool's own maximum", () => {
    const own = policyOf({ tools: [{ match: 'short', maxTtl: 10_000 }] });
    expect(own.ttlFor(own.forTool('short'), 60_000)).toBe(10_000);
    expect(own.ttlFor(own.forTool('short'), undefined)).toBe(10_000);
  });
});
