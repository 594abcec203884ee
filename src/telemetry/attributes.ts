/**
 * The MCP semantic conventions (OpenTelemetry, gen-ai/mcp.md, status Development) as they apply to one
 * message: span names, request and response attributes. Arguments and results are never recorded.
 */
import type { Attributes } from '@opentelemetry/api';
import { digitsOf } from '../protocol/exact-ids.js';
import { isObject, type JsonObject, type RequestId } from '../protocol/messages.js';
import { MODERN_VERSIONS, PROTOCOL_VERSION_META } from '../protocol/modern/meta.js';
import type { ChannelFacts } from './telemetry.js';

/** taskgate's names for what the conventions do not name yet (README "Telemetry"). */
export const TASK_ID = 'mcp.task.id';
export const TASK_STATUS = 'mcp.task.status';
export const TASK_TTL = 'mcp.task.ttl';
export const TASK_POLL_INTERVAL = 'mcp.task.poll_interval';
export const TASK_TOOL = 'gen_ai.tool.name';
export const TASK_SESSION = 'mcp.task.session';
export const TASK_STATUS_MESSAGE = 'mcp.task.status_message';
/** Who runs the task: `taskgate` (its own task, augment) or `server` (the upstream's, which taskgate follows). */
export const TASK_RUNNER = 'mcp.task.runner';
/** What taskgate does with it: `augment`, `pass-through`, `unwrap` or `translated` (docs/design.md). */
export const TASK_MODE = 'mcp.task.mode';
/** The server of `upstreams` a request was routed to (several servers behind one endpoint). */
export const SERVER = 'taskgate.server';
/** A 2026-07-28 result's `resultType` when it is not `complete` (an MRTR round's `input_required`). */
export const RESULT_TYPE = 'mcp.result.type';
/** The methods of an `input_required` result's inputRequests: what the client is asked, in this round. */
export const INPUT_REQUESTS = 'mcp.input_request.methods';

const RESOURCE_METHODS = new Set(['resources/read', 'resources/subscribe', 'resources/unsubscribe']);

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/** `{mcp.method.name} {target}`, the target a tool's or a prompt's name (never a resource URI). */
export function spanName(method: string, params: JsonObject | undefined): string {
  const target = targetOf(method, params);
  return target === undefined ? method : `${method} ${target}`;
}

function targetOf(method: string, params: JsonObject | undefined): string | undefined {
  if (method === 'tools/call' || method === 'prompts/get') return text(params?.name);
  return undefined;
}

/** The protocol version a request states itself (2026-07-28 `_meta`), if it does. */
export function statedVersion(params: JsonObject | undefined): string | undefined {
  const meta = params?._meta;
  return isObject(meta) ? text(meta[PROTOCOL_VERSION_META]) : undefined;
}

export function requestAttributes(
  method: string,
  id: RequestId,
  params: JsonObject | undefined,
  facts: ChannelFacts,
  version: string | undefined,
): Attributes {
  const attributes: Attributes = {
    'mcp.method.name': method,
    'jsonrpc.request.id': digitsOf(id) ?? String(id),
    'network.transport': facts.transport,
  };
  if (facts.transport === 'tcp') attributes['network.protocol.name'] = 'http';
  if (version !== undefined) attributes['mcp.protocol.version'] = version;
  // The conventions: mcp.session.id MUST NOT be set for 2026-07-28, which has no sessions.
  if (facts.sessionId !== undefined && (version === undefined || !MODERN_VERSIONS.includes(version))) {
    attributes['mcp.session.id'] = facts.sessionId;
  }
  if (facts.serverUrl !== undefined) {
    const url = new URL(facts.serverUrl);
    attributes['server.address'] = url.hostname;
    attributes['server.port'] = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  }
  if (facts.server !== undefined) attributes[SERVER] = facts.server;
  if (method === 'tools/call' && text(params?.name) !== undefined) {
    attributes['gen_ai.tool.name'] = text(params?.name);
    attributes['gen_ai.operation.name'] = 'execute_tool';
  }
  if (method === 'prompts/get' && text(params?.name) !== undefined) {
    attributes['gen_ai.prompt.name'] = text(params?.name);
  }
  if (RESOURCE_METHODS.has(method) && text(params?.uri) !== undefined) {
    attributes['mcp.resource.uri'] = text(params?.uri);
  }
  const taskId = text(params?.taskId);
  if (method.startsWith('tasks/') && taskId !== undefined) attributes[TASK_ID] = taskId;
  return attributes;
}

/** A task and its status, as a message gives them. */
export interface TaskState {
  taskId: string;
  status: string;
  statusMessage?: string;
}

/**
 * The task a result or notification states: a 2025 CreateTaskResult's `task`, else the object itself (a
 * 2025 GetTaskResult or `notifications/tasks/status`, a 2026-07-28 task result).
 */
export function taskStateOf(result: JsonObject): TaskState | undefined {
  const said = isObject(result.task) ? result.task : result;
  const taskId = text(said.taskId);
  const status = text(said.status);
  if (taskId === undefined || status === undefined) return undefined;
  const statusMessage = text(said.statusMessage);
  return { taskId, status, ...(statusMessage === undefined ? {} : { statusMessage }) };
}

/** The conventions' opt-in attributes: what a tools/call sends, and what it got if it succeeded. */
export const TOOL_ARGUMENTS = 'gen_ai.tool.call.arguments';
export const TOOL_RESULT = 'gen_ai.tool.call.result';

/** A tools/call's arguments as JSON (OTel attributes hold no objects: the conventions allow the string). */
export function toolArgumentsOf(method: string, params: JsonObject | undefined): Attributes {
  if (method !== 'tools/call' || params?.arguments === undefined) return {};
  return { [TOOL_ARGUMENTS]: JSON.stringify(params.arguments) };
}

/** A tools/call's result as JSON, when the call succeeded with one (not an error, not a task). */
export function toolResultOf(response: JsonObject): Attributes {
  const result = response.result;
  if (!isObject(result) || result.isError === true || taskStateOf(result) !== undefined) return {};
  if (result.resultType !== undefined && result.resultType !== 'complete') return {};
  const { _meta: _, ...content } = result;
  return { [TOOL_RESULT]: JSON.stringify(content) };
}

export interface Outcome {
  attributes: Attributes;
  /** The span's ERROR description, when it failed. */
  error?: string;
}

/** What a response adds to its request's span: the error (JSON-RPC code, or `tool_error`), a task made. */
export function responseOutcome(response: JsonObject): Outcome {
  const error = response.error;
  if (isObject(error)) {
    const code = String(error.code);
    return {
      attributes: { 'error.type': code, 'rpc.response.status_code': code },
      error: text(error.message) ?? code,
    };
  }
  const result = isObject(response.result) ? response.result : {};
  const attributes: Attributes = {};
  const taskId = text(isObject(result.task) ? result.task.taskId : undefined) ?? text(result.taskId);
  if (taskId !== undefined) attributes[TASK_ID] = taskId;
  // A task's status as the answer gave it (tasks/get, tasks/cancel, a CreateTaskResult): a replica that did
  // not create the task shows it here, executor lost included.
  const state = taskStateOf(result);
  if (state !== undefined) attributes[TASK_STATUS] = state.status;
  if (state?.statusMessage !== undefined) attributes[TASK_STATUS_MESSAGE] = state.statusMessage;
  if (typeof result.resultType === 'string' && result.resultType !== 'complete') {
    attributes[RESULT_TYPE] = result.resultType;
  }
  if (isObject(result.inputRequests)) {
    attributes[INPUT_REQUESTS] = Object.values(result.inputRequests).flatMap((asked) =>
      isObject(asked) && typeof asked.method === 'string' ? [asked.method] : [],
    );
  }
  if (result.isError === true) {
    attributes['error.type'] = 'tool_error';
    return { attributes, error: 'tool_error' };
  }
  return { attributes };
}
