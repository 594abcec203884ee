/**
 * zod's issues turned into problems a person can act on: the path, what the setting accepts, and what
 * was given (`tools[2].ttl: expected an integer from 1 to 2592000000, got -5`).
 */
import type { z } from 'zod';
import { expectation, formatPath, keysAt, schemaAt, type ConfigPath } from './introspect.js';
import { isSecretName } from './mask.js';
import { didYouMean } from './suggest.js';

/** A problem with the value at `path`; `text` names the path itself. */
export interface Problem {
  path: ConfigPath;
  text: string;
}

/** A value as a person would recognise it in their config. */
export function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object' && value !== null) return 'a mapping';
  return String(value);
}

/** A secret is never shown, not even a wrong one (it may be a real one, only too short): its length is. */
function showSecret(value: unknown): string {
  return typeof value === 'string' ? `a string of ${value.length} characters` : show(value);
}

/** `expected <what the schema accepts>, got <value>`; for a secret, what it is instead of the value. */
export function expectedGot(schema: z.ZodType, value: unknown, secret = false): string {
  return `expected ${expectation(schema)}, got ${secret ? showSecret(value) : show(value)}`;
}

/**
 * What is wrong with a value, from the first issue zod found with it: a refinement's own message says it
 * better than the shape of the value does, and so does a pattern's ("expected HOST:PORT").
 */
export function whatIsWrong(schema: z.ZodType, issue: z.core.$ZodIssue, secret = false): string {
  if (issue.code === 'custom') return issue.message;
  if (issue.code === 'invalid_format' && issue.format === 'regex') {
    return `${issue.message}, got ${secret ? showSecret(issue.input) : show(issue.input)}`;
  }
  return expectedGot(schema, issue.input, secret);
}

/** One problem per wrong value or unknown key; several failed checks of one value are one problem. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): Problem[] {
  const problems = new Map<string, Problem>();
  for (const issue of issues) {
    const path = issue.path.map((part) => (typeof part === 'number' ? part : String(part)));
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const hint = didYouMean(key, keysAt(path));
        problems.set(formatPath([...path, key]), {
          path: [...path, key],
          text: `${formatPath(path)}: unknown key "${key}"${hint}`,
        });
      }
      continue;
    }
    const where = formatPath(path);
    if (problems.has(where)) continue;
    if (issue.code === 'invalid_key') {
      // A key of a mapping of names (upstreams): the name is what is wrong, not the value under it.
      const why = issue.issues[0]?.message ?? issue.message;
      problems.set(where, { path, text: `${where}: ${why}, got ${show(issue.input)}` });
      continue;
    }
    const schema = schemaAt(path);
    const secret = isSecretName(String(path.at(-1) ?? ''));
    const what = schema === undefined ? issue.message : whatIsWrong(schema, issue, secret);
    problems.set(where, { path, text: `${where}: ${what}` });
  }
  return [...problems.values()];
}
