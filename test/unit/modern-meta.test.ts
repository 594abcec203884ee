import { describe, expect, it } from 'vitest';
import { toJsonRpcError } from '../../src/tasks/wire-errors.js';
import {
  checkCapabilities,
  inputCapabilitiesOf,
  requiredForInputRequest,
  requiredForRequest,
  TASKS_EXTENSION,
} from '../../src/protocol/modern/capabilities.js';
import type { Checked } from '../../src/protocol/modern/errors.js';
import {
  CLIENT_CAPABILITIES_META,
  CLIENT_INFO_META,
  isModernRequest,
  LOG_LEVEL_META,
  PROTOCOL_VERSION_META,
  readRequestMeta,
} from '../../src/protocol/modern/meta.js';

const SUPPORTED = ['2026-07-28', '2025-11-25'];
const meta = (fields: Record<string, unknown>) => ({ name: 'echo', _meta: fields });
const modern = (extra: Record<string, unknown> = {}) =>
  meta({ [PROTOCOL_VERSION_META]: '2026-07-28', [CLIENT_CAPABILITIES_META]: {}, ...extra });

/** The JSON-RPC error a refusal is sent as, and its HTTP status. */
function sent<T>(checked: Checked<T>) {
  if (checked.ok) throw new Error('expected a refusal');
  return { ...toJsonRpcError(checked.error), status: checked.error.httpStatus };
}

describe('isModernRequest', () => {
  it('2026-07-28 basic/versioning: a request carrying _meta protocolVersion is served statelessly (modern)', () => {
    expect(isModernRequest(modern())).toBe(true);
    expect(isModernRequest(meta({ [PROTOCOL_VERSION_META]: 42 }))).toBe(true);
  });

  it('a request without it is legacy traffic', () => {
    expect(isModernRequest(undefined)).toBe(false);
    expect(isModernRequest({ name: 'echo' })).toBe(false);
    expect(isModernRequest(meta({ progressToken: 1 }))).toBe(false);
  });
});

describe('readRequestMeta', () => {
  it('reads the per-request fields, extensions included', () => {
    const capabilities = { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } };
    const read = readRequestMeta(
      modern({
        [CLIENT_CAPABILITIES_META]: capabilities,
        [CLIENT_INFO_META]: { name: 'c', version: '1', title: 'C' },
        [LOG_LEVEL_META]: 'warning',
      }),
      SUPPORTED,
    );
    expect(read).toEqual({
      ok: true,
      value: {
        protocolVersion: '2026-07-28',
        clientCapabilities: capabilities,
        clientInfo: { name: 'c', version: '1', title: 'C' },
        logLevel: 'warning',
      },
    });
  });

  it('2026-07-28 basic/index _meta: clientInfo and logLevel are optional', () => {
    expect(readRequestMeta(modern(), SUPPORTED)).toEqual({
      ok: true,
      value: { protocolVersion: '2026-07-28', clientCapabilities: {} },
    });
  });

  it.each([PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META])(
    '2026-07-28 basic/index per-request fields: a request missing %s MUST be rejected with -32602 (HTTP 400)',
    (key) => {
      const params = modern();
      delete params._meta[key];
      const error = sent(readRequestMeta(params, SUPPORTED));
      expect(error).toMatchObject({ code: -32602, status: 400 });
      expect(error.message).toContain(key);
      expect(error).not.toHaveProperty('data');
    },
  );

  it.each([
    ['a protocolVersion that is not a string', { [PROTOCOL_VERSION_META]: 20260728 }],
    ['clientCapabilities that are not an object', { [CLIENT_CAPABILITIES_META]: [] }],
    [
      'extensions that are not objects',
      { [CLIENT_CAPABILITIES_META]: { extensions: { [TASKS_EXTENSION]: true } } },
    ],
    ['a clientInfo without a version', { [CLIENT_INFO_META]: { name: 'c' } }],
    ['an unknown logLevel (server/utilities/logging Error Handling)', { [LOG_LEVEL_META]: 'verbose' }],
  ])('refuses %s with -32602', (_, fields) => {
    expect(sent(readRequestMeta(modern(fields), SUPPORTED))).toMatchObject({ code: -32602, status: 400 });
  });

  it.each(['1900-01-01', '2025-11-25'])(
    '2026-07-28 basic/versioning negotiation: an unserved version %s MUST get -32022 with data {supported, requested}',
    (requested) => {
      expect(sent(readRequestMeta(modern({ [PROTOCOL_VERSION_META]: requested }), SUPPORTED))).toEqual({
        code: -32022,
        message: 'Unsupported protocol version',
        data: { supported: SUPPORTED, requested },
        status: 400,
      });
    },
  );
});

describe('required capabilities', () => {
  const tasks = { extensions: { [TASKS_EXTENSION]: {} } };

  it.each(['tasks/get', 'tasks/update', 'tasks/cancel'])(
    'ext-tasks Error Handling: %s from a client without the extension MUST get -32021 naming it',
    (method) => {
      expect(sent(checkCapabilities(requiredForRequest(method, { taskId: 't' }), {}))).toEqual({
        code: -32021,
        message: `Missing required client capability: extensions.${TASKS_EXTENSION}`,
        data: { requiredCapabilities: tasks },
        status: 400,
      });
      expect(checkCapabilities(requiredForRequest(method, {}), tasks).ok).toBe(true);
    },
  );

  it('ext-tasks Task Status Notifications: subscriptions/listen with taskIds MUST need the extension', () => {
    expect(requiredForRequest('subscriptions/listen', { notifications: { taskIds: ['t'] } })).toEqual(tasks);
    expect(requiredForRequest('subscriptions/listen', { notifications: { toolsListChanged: true } })).toEqual(
      {},
    );
    expect(requiredForRequest('tools/call', { name: 'x' })).toEqual({});
  });

  it.each([
    ['elicitation/create', { message: 'm', requestedSchema: {} }, { elicitation: { form: {} } }],
    ['elicitation/create', { mode: 'url', message: 'm', url: 'https://x' }, { elicitation: { url: {} } }],
    ['sampling/createMessage', { messages: [], maxTokens: 1 }, { sampling: {} }],
    ['sampling/createMessage', { messages: [], maxTokens: 1, tools: [] }, { sampling: { tools: {} } }],
    [
      'sampling/createMessage',
      { messages: [], maxTokens: 1, includeContext: 'thisServer' },
      { sampling: { context: {} } },
    ],
    ['roots/list', undefined, { roots: {} }],
  ])('2026-07-28 basic/patterns/mrtr: an input request %s needs %j declared', (method, params, required) => {
    expect(requiredForInputRequest({ method, params })).toEqual(required);
  });

  it('nothing else can be an input request', () => {
    expect(requiredForInputRequest({ method: 'tools/call' })).toBeUndefined();
  });

  it('2026-07-28 basic/patterns/mrtr Server Requirements 7: MUST NOT send an input request the client did not declare', () => {
    const elicit = requiredForInputRequest({ method: 'elicitation/create', params: { message: 'm' } }) ?? {};
    expect(sent(checkCapabilities(elicit, { sampling: {} }))).toMatchObject({
      code: -32021,
      message: 'Missing required client capability: elicitation.form',
      data: { requiredCapabilities: { elicitation: { form: {} } } },
    });
    const url = { elicitation: { url: {} } };
    expect(sent(checkCapabilities(url, { elicitation: { form: {} } }))).toMatchObject({
      data: { requiredCapabilities: url },
    });
    expect(sent(checkCapabilities({ sampling: { tools: {} } }, { sampling: {} }))).toMatchObject({
      data: { requiredCapabilities: { sampling: { tools: {} } } },
    });
  });

  it('2026-07-28 client/elicitation Capabilities: an empty elicitation object declares form mode', () => {
    expect(checkCapabilities({ elicitation: { form: {} } }, { elicitation: {} }).ok).toBe(true);
    expect(checkCapabilities({ elicitation: { url: {} } }, { elicitation: {} }).ok).toBe(false);
  });

  it('extension settings do not stand in the way of a declaration', () => {
    expect(checkCapabilities(tasks, { extensions: { [TASKS_EXTENSION]: { future: 1 } } }).ok).toBe(true);
  });
});

describe('inputCapabilitiesOf (what a waiting call or a task keeps of its request)', () => {
  const inputRequests = [
    { method: 'elicitation/create', params: { message: 'm' } },
    { method: 'elicitation/create', params: { mode: 'url', message: 'm', url: 'https://x' } },
    { method: 'sampling/createMessage', params: { messages: [] } },
    { method: 'sampling/createMessage', params: { messages: [], tools: [] } },
    { method: 'sampling/createMessage', params: { messages: [], includeContext: 'thisServer' } },
    { method: 'roots/list' },
  ];
  const declarations = [
    {},
    { elicitation: {} },
    { elicitation: { url: {} } },
    { elicitation: { form: {}, url: {} }, roots: { listChanged: true } },
    { sampling: {} },
    { sampling: { tools: {}, context: {} } },
    { sampling: { tools: true }, elicitation: 'yes', roots: {} },
    { experimental: { padding: 'x'.repeat(1000) }, extensions: { [TASKS_EXTENSION]: {} }, roots: {} },
  ];

  it.each(declarations)('agrees with the whole declaration %j on every input request', (declared) => {
    const kept = inputCapabilitiesOf(declared);
    for (const request of inputRequests) {
      const required = requiredForInputRequest(request)!;
      expect(checkCapabilities(required, kept).ok, request.method).toBe(
        checkCapabilities(required, declared).ok,
      );
    }
  });

  it('keeps nothing an input request cannot need', () => {
    expect(
      inputCapabilitiesOf({
        experimental: { padding: 'x'.repeat(1000) },
        extensions: { [TASKS_EXTENSION]: {} },
        roots: { listChanged: true },
        sampling: { tools: {}, future: { big: 'x' } },
      }),
    ).toEqual({ roots: {}, sampling: { tools: {} } });
  });
});
