import {
  CreateTaskResultV1Schema,
  GetTaskResultV1Schema,
  TaskResultV1Schema,
  TaskStatusNotificationV1Schema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  TaskStatusNotificationParamsV2Schema,
  type DetailedTaskV2,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { describe, expect, it } from 'vitest';
import {
  factsFromRecord,
  factsFromV1,
  factsFromV2,
  OutcomeRequiredError,
  toV1CreateTaskResult,
  toV1Task,
  toV1TaskResult,
  toV2CreateTaskResult,
  toV2DetailedTask,
  toV2GetTaskResult,
} from '../../src/tasks/generations.js';
import { taskRecord } from '../helpers/records.js';
import { validWhole } from '../helpers/official-schemas.js';

const toolError = { content: [{ type: 'text', text: 'invalid input' }], isError: true };
const toolResult = { content: [{ type: 'text', text: 'Hello, Luca!' }], isError: false };
const rpcError = { code: -32603, message: 'API rate limit exceeded' };
const elicit = {
  name: {
    method: 'elicitation/create',
    params: { mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: {} } },
  },
};
const iso = (ms: number) => new Date(ms).toISOString();

describe('the v1 face of a record', () => {
  it('2025-11-25 tasks: creation nests the Task under task, with ttl and pollInterval', () => {
    const facts = factsFromRecord(taskRecord());
    expect(validWhole(CreateTaskResultV1Schema, toV1CreateTaskResult(facts))).toEqual({
      task: {
        taskId: '0f3a9c1e-0000-4000-8000-000000000000',
        status: 'working',
        createdAt: iso(1_000),
        lastUpdatedAt: iso(1_000),
        ttl: 60_000,
        pollInterval: 1_000,
      },
    });
  });

  it('2025-11-25 tasks: an isError result leaves the task failed, as recorded', () => {
    const record = taskRecord({
      status: 'failed',
      statusMessage: 'Tool call failed: invalid input',
      outcome: { result: toolError },
    });
    const task = toV1Task(factsFromRecord(record));
    expect(validWhole(GetTaskResultV1Schema, task)).toMatchObject({
      status: 'failed',
      statusMessage: 'Tool call failed: invalid input',
    });
    validWhole(TaskStatusNotificationV1Schema, {
      jsonrpc: '2.0',
      method: 'notifications/tasks/status',
      params: task,
    });
  });
});

describe('the v2 face of a record', () => {
  it('ext-tasks Task Creation: MUST set resultType "task" on a flat CreateTaskResult with ttlMs and pollIntervalMs', () => {
    const created = toV2CreateTaskResult(factsFromRecord(taskRecord({ statusMessage: 'Started' })));
    expect(validWhole(CreateTaskResultV2Schema, created)).toEqual({
      resultType: 'task',
      taskId: '0f3a9c1e-0000-4000-8000-000000000000',
      status: 'working',
      statusMessage: 'Started',
      createdAt: iso(1_000),
      lastUpdatedAt: iso(1_000),
      ttlMs: 60_000,
      pollIntervalMs: 1_000,
    });
    expect(created).not.toHaveProperty('task');
    expect(created).not.toHaveProperty('ttl');
  });

  it('ext-tasks Task Execution Errors: an isError result MUST be completed with the result, not failed', () => {
    const record = taskRecord({
      status: 'failed',
      statusMessage: 'Tool call failed: invalid input',
      outcome: { result: toolError },
    });
    expect(validWhole(GetTaskResultV2Schema, toV2GetTaskResult(factsFromRecord(record)))).toMatchObject({
      resultType: 'complete',
      status: 'completed',
      result: toolError,
    });
  });

  it('ext-tasks Task Polling 3: a completed task MUST carry its result inline', () => {
    const record = taskRecord({ status: 'completed', outcome: { result: toolResult } });
    expect(validWhole(GetTaskResultV2Schema, toV2GetTaskResult(factsFromRecord(record)))).toMatchObject({
      status: 'completed',
      result: toolResult,
    });
  });

  it('ext-tasks Task Polling 5: a failed task MUST carry the JSON-RPC error', () => {
    const record = taskRecord({
      status: 'failed',
      statusMessage: 'Tool call failed',
      outcome: { error: rpcError },
    });
    expect(validWhole(GetTaskResultV2Schema, toV2GetTaskResult(factsFromRecord(record)))).toMatchObject({
      status: 'failed',
      statusMessage: 'Tool call failed',
      error: rpcError,
    });
  });

  it('ext-tasks Task Polling 2: an input_required task MUST list its outstanding inputRequests', () => {
    const record = taskRecord({ status: 'input_required' });
    expect(
      validWhole(GetTaskResultV2Schema, toV2GetTaskResult(factsFromRecord(record, elicit))),
    ).toMatchObject({
      status: 'input_required',
      inputRequests: elicit,
    });
    expect(toV2DetailedTask(factsFromRecord(record))).toMatchObject({ inputRequests: {} });
  });

  it.each(['working', 'cancelled'] as const)(
    'ext-tasks Task Polling: a %s task carries no payload',
    (status) => {
      const detailed = toV2DetailedTask(factsFromRecord(taskRecord({ status })));
      validWhole(TaskStatusNotificationParamsV2Schema, detailed);
      expect(Object.keys(detailed).sort()).toEqual([
        'createdAt',
        'lastUpdatedAt',
        'pollIntervalMs',
        'status',
        'taskId',
        'ttlMs',
      ]);
    },
  );

  it('refuses to draw a terminal v2 face without the outcome', () => {
    expect(() => toV2DetailedTask(factsFromRecord(taskRecord({ status: 'completed' })))).toThrow(
      OutcomeRequiredError,
    );
  });
});

describe('a v2 upstream task, for a v1 client', () => {
  const base = {
    taskId: '786512e2-9e0d-44bd-8f29-789f320fe840',
    createdAt: '2025-11-25T10:30:00Z',
    lastUpdatedAt: '2025-11-25T10:50:00Z',
    ttlMs: 3_600_000,
    pollIntervalMs: 5_000,
  };

  it('re-nests a flat CreateTaskResult and renames the lifetimes', () => {
    const created = validWhole(CreateTaskResultV2Schema, { resultType: 'task', status: 'working', ...base });
    expect(validWhole(CreateTaskResultV1Schema, toV1CreateTaskResult(factsFromV2(created)))).toEqual({
      task: {
        taskId: base.taskId,
        status: 'working',
        createdAt: base.createdAt,
        lastUpdatedAt: base.lastUpdatedAt,
        ttl: 3_600_000,
        pollInterval: 5_000,
      },
    });
  });

  it('2025-11-25 tasks: a completed isError result is failed on the v1 face; its outcome is the result', () => {
    const detailed = validWhole<DetailedTaskV2>(GetTaskResultV2Schema, {
      resultType: 'complete',
      status: 'completed',
      result: toolError,
      ...base,
    });
    const facts = factsFromV2(detailed);
    expect(validWhole(GetTaskResultV1Schema, toV1Task(facts)).status).toBe('failed');
    expect(facts.outcome).toEqual({ result: toolError });
  });

  it('keeps a failed task failed with its error as the outcome, and an unlimited ttl null', () => {
    const detailed = validWhole<DetailedTaskV2>(GetTaskResultV2Schema, {
      resultType: 'complete',
      status: 'failed',
      error: rpcError,
      ...base,
      ttlMs: null,
    });
    const facts = factsFromV2(detailed);
    expect(validWhole(GetTaskResultV1Schema, toV1Task(facts))).toMatchObject({ status: 'failed', ttl: null });
    expect(facts.outcome).toEqual({ error: rpcError });
  });

  it('carries the pending input requests in the facts, for the side requests of tasks/result', () => {
    const detailed = validWhole<DetailedTaskV2>(GetTaskResultV2Schema, {
      resultType: 'complete',
      status: 'input_required',
      inputRequests: elicit,
      ...base,
    });
    const facts = factsFromV2(detailed);
    expect(facts.inputRequests).toEqual(elicit);
    expect(toV1Task(facts).status).toBe('input_required');
  });

  it('2025-11-25 tasks "Result Retrieval": tasks/result is exactly the inline result, tagged related-task', () => {
    const facts = factsFromV2(
      validWhole<DetailedTaskV2>(GetTaskResultV2Schema, {
        resultType: 'complete',
        status: 'completed',
        result: { ...toolResult, _meta: { 'example.com/own': 1 } },
        ...base,
      }),
    );
    const answer = toV1TaskResult(facts);
    expect(answer).toEqual({
      result: {
        ...toolResult,
        _meta: { 'example.com/own': 1, 'io.modelcontextprotocol/related-task': { taskId: base.taskId } },
      },
    });
    if ('result' in answer) validWhole(TaskResultV1Schema, answer.result);
  });

  it('tasks/result of an isError task is its result; of a failed one its error; of a cancelled one an error that says so', () => {
    const completed = factsFromV2({ status: 'completed', result: toolError, ...base } as DetailedTaskV2);
    expect(toV1TaskResult(completed)).toMatchObject({ result: toolError });
    const failed = factsFromV2({ status: 'failed', error: rpcError, ...base } as DetailedTaskV2);
    expect(toV1TaskResult(failed)).toEqual({ error: rpcError });
    const cancelled = factsFromV2({ status: 'cancelled', ...base } as DetailedTaskV2);
    expect(toV1TaskResult(cancelled)).toEqual({
      error: { code: -32603, message: `Task ${base.taskId} was cancelled: it has no result` },
    });
  });

  it('a task still working has no tasks/result answer yet', () => {
    const working = factsFromV2({ status: 'working', ...base } as DetailedTaskV2);
    expect(() => toV1TaskResult(working)).toThrow(OutcomeRequiredError);
  });
});

describe('a v1 upstream task, for a v2 client', () => {
  const task = {
    taskId: 't-1',
    createdAt: '2025-11-25T10:30:00Z',
    lastUpdatedAt: '2025-11-25T10:40:00Z',
    ttl: 60_000,
    pollInterval: 2_000,
  };

  it('a failed v1 task whose tasks/result was an isError result is completed on the v2 face', () => {
    const facts = factsFromV1({ ...task, status: 'failed' }, { result: toolError });
    expect(validWhole(GetTaskResultV2Schema, toV2GetTaskResult(facts))).toMatchObject({
      status: 'completed',
      result: toolError,
      ttlMs: 60_000,
      pollIntervalMs: 2_000,
    });
  });

  it('a failed v1 task whose tasks/result was a JSON-RPC error stays failed', () => {
    const facts = factsFromV1({ ...task, status: 'failed' }, { error: rpcError });
    expect(validWhole(GetTaskResultV2Schema, toV2GetTaskResult(facts))).toMatchObject({
      status: 'failed',
      error: rpcError,
    });
  });

  it('a terminal v1 task needs its tasks/result first', () => {
    expect(() => toV2DetailedTask(factsFromV1({ ...task, status: 'completed' }))).toThrow(
      OutcomeRequiredError,
    );
  });

  it('a v1 task without a pollInterval has none on the v2 face either', () => {
    const { pollInterval: _p, ...bare } = task;
    const created = toV2CreateTaskResult(factsFromV1({ ...bare, status: 'working' }));
    expect(validWhole(CreateTaskResultV2Schema, created)).not.toHaveProperty('pollIntervalMs');
  });
});
