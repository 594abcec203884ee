import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';

/** What a promise rejects with; fails the test when it resolves instead. */
export async function thrownBy(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}

/** The McpError a request rejects with, of `code` when given; fails the test otherwise. */
export async function mcpErrorOf(promise: Promise<unknown>, code?: number): Promise<McpError> {
  const error = await thrownBy(promise);
  expect(error).toBeInstanceOf(McpError);
  if (code !== undefined) expect((error as McpError).code).toBe(code);
  return error as McpError;
}
