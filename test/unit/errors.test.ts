import { describe, expect, it } from 'vitest';
import { ErrorCode, invalidParams, methodNotFound, ProtocolError } from '../../src/protocol/errors.js';
import {
  InvalidCursorError,
  TaskLimitError,
  TaskNotFoundError,
  TaskStoreUnavailableError,
} from '../../src/tasks/errors.js';
import { IllegalTransitionError } from '../../src/tasks/state.js';
import { toJsonRpcError } from '../../src/tasks/wire-errors.js';

const TASK_ID = '786512e2-9e0d-44bd-8f29-789f320fe840';

describe('ErrorCode', () => {
  it('has the JSON-RPC 2.0 codes', () => {
    expect(ErrorCode).toMatchObject({
      ParseError: -32700,
      InvalidRequest: -32600,
      MethodNotFound: -32601,
      InvalidParams: -32602,
      InternalError: -32603,
    });
  });
});

describe('toJsonRpcError', () => {
  it('sends a ProtocolError as it is, with its data when it has some', () => {
    expect(toJsonRpcError(new ProtocolError(ErrorCode.InvalidRequest, 'bad'))).toEqual({
      code: -32600,
      message: 'bad',
    });
    expect(toJsonRpcError(new ProtocolError(-32000, 'gone', { upstream: 'node' }))).toEqual({
      code: -32000,
      message: 'gone',
      data: { upstream: 'node' },
    });
  });

  it('sends the helpers with their codes', () => {
    expect(toJsonRpcError(invalidParams('no taskId'))).toEqual({ code: -32602, message: 'no taskId' });
    expect(toJsonRpcError(methodNotFound('nope'))).toEqual({ code: -32601, message: 'nope' });
  });

  it('sends TaskNotFoundError as InvalidParams naming the task (spec: Error Handling, invalid or nonexistent taskId)', () => {
    const error = toJsonRpcError(new TaskNotFoundError(TASK_ID));
    expect(error.code).toBe(ErrorCode.InvalidParams);
    expect(error.message).toContain(TASK_ID);
    expect(error).not.toHaveProperty('data');
  });

  it.each(['completed', 'failed', 'cancelled'] as const)(
    "sends a refused cancel of a %s task as InvalidParams, 'already in terminal status' (spec: Task Cancellation 1)",
    (status) => {
      expect(toJsonRpcError(new IllegalTransitionError(TASK_ID, status, 'cancelled'))).toEqual({
        code: -32602,
        message: `Cannot cancel task: already in terminal status '${status}'`,
      });
    },
  );

  it('matches the spec example for a completed task word for word (spec: Error Handling, example)', () => {
    expect(toJsonRpcError(new IllegalTransitionError(TASK_ID, 'completed', 'cancelled')).message).toBe(
      "Cannot cancel task: already in terminal status 'completed'",
    );
  });

  it('sends any other refused transition as an internal error, without its message', () => {
    const error = toJsonRpcError(new IllegalTransitionError(TASK_ID, 'completed', 'working'));
    expect(error).toEqual({ code: ErrorCode.InternalError, message: expect.any(String) });
    expect(error.message).not.toContain(TASK_ID);
  });

  it('sends InvalidCursorError as InvalidParams (spec: Error Handling, invalid cursor)', () => {
    const error = toJsonRpcError(new InvalidCursorError());
    expect(error.code).toBe(ErrorCode.InvalidParams);
    expect(error.message).toMatch(/cursor/i);
  });

  it('sends TaskLimitError as LimitExceeded with its explanation', () => {
    const limit = 'Too many live tasks: all 3 task slots are working (max-tasks)';
    expect(toJsonRpcError(new TaskLimitError(limit))).toEqual({
      code: ErrorCode.LimitExceeded,
      message: limit,
    });
    expect(ErrorCode.LimitExceeded).toBeLessThanOrEqual(-32000);
    expect(ErrorCode.LimitExceeded).toBeGreaterThanOrEqual(-32099);
  });

  it('sends TaskStoreUnavailableError as StoreUnavailable, without naming the server', () => {
    const error = toJsonRpcError(
      new TaskStoreUnavailableError(
        'Task store unavailable: Redis at redis://10.0.0.7:6379/0 is not connected',
      ),
    );
    expect(error).toEqual({ code: ErrorCode.StoreUnavailable, message: expect.stringMatching(/retry/) });
    expect(error.message).not.toContain('10.0.0.7');
    expect(ErrorCode.StoreUnavailable).toBeLessThanOrEqual(-32000);
    expect(ErrorCode.StoreUnavailable).toBeGreaterThanOrEqual(-32099);
  });

  it.each([
    ['an Error', new Error('ENOENT: /home/alice/secret.txt')],
    ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'secret')")],
    ['a string', 'secret string'],
    ['undefined', undefined],
    ['an object with a code', { code: -32602, message: 'secret object' }],
  ])('sends %s as InternalError without leaking it (spec: Error Handling, internal errors)', (_, thrown) => {
    const error = toJsonRpcError(thrown);
    expect(error.code).toBe(ErrorCode.InternalError);
    expect(error).not.toHaveProperty('data');
    expect(error.message).not.toMatch(/secret|ENOENT|alice/);
  });
});
