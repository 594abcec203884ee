/** The schema read as data: what each kind of setting is said to accept, and the did-you-mean distance. */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { expectation, formatPath, keysAt, schemaAt } from '../../src/config/introspect.js';
import { closest, editDistance } from '../../src/config/suggest.js';

describe('expectation', () => {
  it.each([
    [z.number().int().positive(), 'a positive integer'],
    [z.number().int().positive().max(10), 'an integer from 1 to 10'],
    [z.number().int().nonnegative().max(10), 'an integer from 0 to 10'],
    [z.number().int().min(5), 'an integer of at least 5'],
    [z.number().int().nonnegative(), 'a non-negative integer'],
    [z.number().max(2), 'a number of at most 2'],
    [z.number(), 'a number'],
    [z.string().min(1), 'a non-empty string'],
    [z.string().optional(), 'a string'],
    [z.boolean().default(true), 'true or false'],
    [z.enum(['a', 'b']), 'one of a, b'],
    [z.array(z.string()), 'a list of strings'],
    [z.record(z.string(), z.string()), 'a mapping of names to strings'],
    [z.object({}), 'a mapping'],
  ])('describes %#', (schema, text) => {
    expect(expectation(schema as z.ZodType)).toBe(text);
  });
});

describe('paths in the config schema', () => {
  it('finds the schema at a path through sections, lists and maps', () => {
    expect(expectation(schemaAt(['tools', 3, 'taskSupport'])!)).toBe(
      'one of required, optional, forbidden, passthrough',
    );
    expect(expectation(schemaAt(['upstream', 'env', 'ANY'])!)).toBe('a string');
    expect(schemaAt(['tasks', 'nope'])).toBeUndefined();
    expect(schemaAt(['logLevel', 'deeper'])).toBeUndefined();
  });

  it('knows the keys of each section', () => {
    expect(keysAt(['unwrap'])).toEqual(['minPollInterval', 'maxPollInterval', 'keepAliveInterval']);
    expect(keysAt(['tools', 0])).toContain('immediateResponse');
    expect(keysAt(['logLevel'])).toEqual([]);
  });

  it('writes paths the way a person reads them', () => {
    expect(formatPath(['tools', 2, 'ttl'])).toBe('tools[2].ttl');
    expect(formatPath([])).toBe('(root)');
  });
});

describe('did you mean', () => {
  it('counts edits', () => {
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('MaxTtl', 'maxttl')).toBe(0);
  });

  it('offers the closest candidate only when it is close', () => {
    expect(closest('pollIntervall', ['pollInterval', 'maxTtl'])).toBe('pollInterval');
    expect(closest('listen', ['pollInterval', 'maxTtl'])).toBeUndefined();
  });
});
