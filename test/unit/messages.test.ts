import { describe, expect, it } from 'vitest';
import { ErrorCode, ProtocolError } from '../../src/protocol/errors.js';
import {
  classify,
  errorResponse,
  idKey,
  metaOf,
  RELATED_TASK_META,
  salvageId,
  successResponse,
  withMeta,
} from '../../src/protocol/messages.js';

const refusal = (value: unknown): ProtocolError => {
  try {
    classify(value);
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    return error as ProtocolError;
  }
  throw new Error(`classify accepted ${JSON.stringify(value)}`);
};

describe('classify', () => {
  it.each([
    ['a number id', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x' } }],
    ['a string id', { jsonrpc: '2.0', id: 'abc', method: 'tools/list' }],
    ['id 0 and no params', { jsonrpc: '2.0', id: 0, method: 'ping' }],
    ['params: undefined', { jsonrpc: '2.0', id: 2, method: 'ping', params: undefined }],
  ])('classifies a request with %s', (_, value) => {
    const message = classify(value);
    expect(message.kind).toBe('request');
    expect(message.msg).toBe(value);
  });

  it('refuses a fractional or imprecise numeric id (MCP ids are strings or integers), still addressing it', () => {
    for (const id of [1.5, 1e300]) {
      const value = { jsonrpc: '2.0', id, method: 'ping' };
      expect(() => classify(value)).toThrow(expect.objectContaining({ code: ErrorCode.InvalidRequest }));
      expect(salvageId(value)).toBe(id);
    }
  });

  it.each([
    ['params', { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } }],
    ['no params', { jsonrpc: '2.0', method: 'notifications/initialized' }],
  ])('classifies a notification with %s', (_, value) => {
    expect(classify(value)).toEqual({ kind: 'notification', msg: value });
  });

  it.each([
    ['a result', { jsonrpc: '2.0', id: 1, result: {} }],
    ['a string id', { jsonrpc: '2.0', id: 'x', result: { content: [] } }],
    ['an error', { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found' } }],
    ['an error with data', { jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'x', data: [1] } }],
    ['an error and a null id', { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }],
  ])('classifies a response with %s', (_, value) => {
    expect(classify(value)).toEqual({ kind: 'response', msg: value });
  });

  it.each([
    ['null', null],
    ['a number', 42],
    ['a string', '{"jsonrpc":"2.0"}'],
    ['a boolean', true],
  ])('refuses %s with InvalidRequest', (_, value) => {
    expect(refusal(value).code).toBe(ErrorCode.InvalidRequest);
  });

  it('refuses a batch (an array) with InvalidRequest', () => {
    const error = refusal([{ jsonrpc: '2.0', id: 1, method: 'ping' }]);
    expect(error.code).toBe(ErrorCode.InvalidRequest);
    expect(error.message).toContain('object');
  });

  it.each([
    ['missing', { id: 1, method: 'ping' }],
    ['"1.0"', { jsonrpc: '1.0', id: 1, method: 'ping' }],
    ['the number 2', { jsonrpc: 2, id: 1, method: 'ping' }],
    ['"2.0 "', { jsonrpc: '2.0 ', id: 1, method: 'ping' }],
  ])('refuses a jsonrpc that is %s with InvalidRequest', (_, value) => {
    const error = refusal(value);
    expect(error.code).toBe(ErrorCode.InvalidRequest);
    expect(error.message).toContain('jsonrpc');
  });

  it.each([
    ['null on a request', { jsonrpc: '2.0', id: null, method: 'ping' }],
    ['a boolean', { jsonrpc: '2.0', id: true, method: 'ping' }],
    ['an object', { jsonrpc: '2.0', id: { n: 1 }, method: 'ping' }],
    ['an array', { jsonrpc: '2.0', id: [1], method: 'ping' }],
    ['NaN', { jsonrpc: '2.0', id: Number.NaN, method: 'ping' }],
    ['Infinity', { jsonrpc: '2.0', id: Number.POSITIVE_INFINITY, method: 'ping' }],
    ['a boolean on a response', { jsonrpc: '2.0', id: false, result: {} }],
  ])('refuses an id that is %s with InvalidRequest', (_, value) => {
    const error = refusal(value);
    expect(error.code).toBe(ErrorCode.InvalidRequest);
    expect(error.message).toContain('"id"');
  });

  // KNOWN BUG (src/protocol/messages.ts, classify): a null id is let through whenever the message has a
  // "result" or "error" member, before classify knows what the message is; a message with a "method" is
  // then typed as a Request whose id is null (and idKey(null) is the key of the string id "null").
  // Null is only allowed on an error response. Remove `.fails` once fixed.
  it('refuses a request with a null id even when it also carries a result or an error', () => {
    expect(refusal({ jsonrpc: '2.0', id: null, method: 'ping', result: {} }).code).toBe(
      ErrorCode.InvalidRequest,
    );
    expect(refusal({ jsonrpc: '2.0', id: null, method: 'ping', error: { code: 1, message: 'x' } }).code).toBe(
      ErrorCode.InvalidRequest,
    );
  });

  // KNOWN BUG (same check): JSON-RPC 2.0 allows a null id only on an error response. Remove `.fails` once fixed.
  it('refuses a success response with a null id', () => {
    expect(refusal({ jsonrpc: '2.0', id: null, result: {} }).code).toBe(ErrorCode.InvalidRequest);
  });

  it('refuses array params of a request with InvalidParams', () => {
    const error = refusal({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: ['x'] });
    expect(error.code).toBe(ErrorCode.InvalidParams);
    expect(error.message).toContain('tools/call');
  });

  it.each([
    ['a string', 'x'],
    ['a number', 1],
    ['null', null],
    ['a boolean', false],
  ])('refuses %s as params of a request with InvalidRequest', (_, params) => {
    expect(refusal({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }).code).toBe(
      ErrorCode.InvalidRequest,
    );
  });

  it('refuses non-object params of a notification too', () => {
    expect(refusal({ jsonrpc: '2.0', method: 'notifications/x', params: [1] }).code).toBe(
      ErrorCode.InvalidParams,
    );
    expect(refusal({ jsonrpc: '2.0', method: 'notifications/x', params: 1 }).code).toBe(
      ErrorCode.InvalidRequest,
    );
  });

  it.each([
    ['without id', { jsonrpc: '2.0' }],
    ['with an id', { jsonrpc: '2.0', id: 1 }],
    ['with params only', { jsonrpc: '2.0', id: 1, params: {} }],
  ])('refuses a message with no method, result or error, %s, with InvalidRequest', (_, value) => {
    expect(refusal(value).code).toBe(ErrorCode.InvalidRequest);
  });

  it.each([
    ['a number', 5],
    ['null', null],
    ['an object', { name: 'ping' }],
  ])('refuses a method that is %s', (_, method) => {
    const error = refusal({ jsonrpc: '2.0', id: 1, method });
    expect(error.code).toBe(ErrorCode.InvalidRequest);
    expect(error.message).toContain('method');
  });

  it.each([
    ['both result and error', { jsonrpc: '2.0', id: 1, result: {}, error: { code: 1, message: 'x' } }],
    ['a result that is not an object', { jsonrpc: '2.0', id: 1, result: 'ok' }],
    ['a result without an id', { jsonrpc: '2.0', result: {} }],
    ['an error without a code', { jsonrpc: '2.0', id: 1, error: { message: 'x' } }],
    ['an error with a string code', { jsonrpc: '2.0', id: 1, error: { code: '-32600', message: 'x' } }],
    ['an error without a message', { jsonrpc: '2.0', id: 1, error: { code: -32600 } }],
    ['an error that is a string', { jsonrpc: '2.0', id: 1, error: 'bad' }],
  ])('refuses a response with %s with InvalidRequest', (_, value) => {
    expect(refusal(value).code).toBe(ErrorCode.InvalidRequest);
  });
});

describe('salvageId', () => {
  it('returns a usable id of an invalid message, or null', () => {
    expect(salvageId({ jsonrpc: '1.0', id: 5, method: 'x' })).toBe(5);
    expect(salvageId({ id: 'a' })).toBe('a');
    expect(salvageId({ id: true })).toBeNull();
    expect(salvageId({ id: null })).toBeNull();
    expect(salvageId([{ id: 1 }])).toBeNull();
    expect(salvageId('x')).toBeNull();
  });
});

describe('idKey', () => {
  it('keeps 1 and "1" apart', () => {
    expect(idKey(1)).not.toEqual(idKey('1'));
    expect(idKey('1')).toEqual(idKey('1'));
    expect(idKey(1)).toEqual(idKey(1));
  });
});

describe('errorResponse and successResponse', () => {
  it('build JSON-RPC 2.0 envelopes that classify back as responses', () => {
    const failure = errorResponse(null, { code: ErrorCode.ParseError, message: 'Parse error' });
    const success = successResponse(3, { tools: [] });
    expect(failure).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    expect(success).toEqual({ jsonrpc: '2.0', id: 3, result: { tools: [] } });
    expect(classify(failure).kind).toBe('response');
    expect(classify(success).kind).toBe('response');
  });
});

describe('withMeta', () => {
  const related = { taskId: '786512e2-9e0d-44bd-8f29-789f320fe840' };

  it('adds the key to a copy of params and _meta, mutating neither', () => {
    const params = { name: 'x', _meta: { progressToken: 7 }, arguments: { a: 1 } };
    const snapshot = structuredClone(params);
    const result = withMeta(params, RELATED_TASK_META, related);
    expect(result).toEqual({ ...snapshot, _meta: { progressToken: 7, [RELATED_TASK_META]: related } });
    expect(params).toEqual(snapshot);
    expect(result).not.toBe(params);
    expect(result._meta).not.toBe(params._meta);
    expect(result.arguments).toBe(params.arguments);
  });

  it('creates params and _meta when there are none', () => {
    expect(withMeta(undefined, RELATED_TASK_META, related)).toEqual({
      _meta: { [RELATED_TASK_META]: related },
    });
    expect(withMeta({ a: 1 }, 'k', 'v')).toEqual({ a: 1, _meta: { k: 'v' } });
  });

  it('replaces an existing value of the key and a _meta that is not an object', () => {
    expect(withMeta({ _meta: { k: 'old', other: 1 } }, 'k', 'new')).toEqual({
      _meta: { k: 'new', other: 1 },
    });
    expect(withMeta({ _meta: 'junk' }, 'k', 'v')).toEqual({ _meta: { k: 'v' } });
    expect(withMeta({ _meta: ['junk'] }, 'k', 'v')).toEqual({ _meta: { k: 'v' } });
  });
});

describe('metaOf', () => {
  it('returns _meta only when it is an object', () => {
    expect(metaOf({ _meta: { a: 1 } })).toEqual({ a: 1 });
    expect(metaOf({ _meta: 'x' })).toBeUndefined();
    expect(metaOf({ _meta: null })).toBeUndefined();
    expect(metaOf(undefined)).toBeUndefined();
  });
});
