/** Checks against the official generated schemas (ext-tasks `./core/v1`, `./core/v2`). */
import { expect } from 'vitest';

interface Schema<T> {
  safeParse: (value: unknown) => { success: boolean; error?: unknown; data?: T };
}

/** Parses with an official schema, failing the test with zod's words. */
export function valid<T>(schema: Schema<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  expect(parsed.error).toBeUndefined();
  return parsed.data as T;
}

/** As `valid`, and fails when the schema had to drop a field. */
export function validWhole<T>(schema: Schema<T>, value: unknown): T {
  const data = valid(schema, value);
  expect(data).toEqual(value);
  return data;
}
