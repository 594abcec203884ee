import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../src/protocol/errors.js';
import { RELATED_TASK_META } from '../../src/protocol/messages.js';
import { TASKS_EXTENSION } from '../../src/protocol/modern/capabilities.js';
import { buildDiscoverResult } from '../../src/protocol/modern/discover.js';
import { SERVER_INFO_META } from '../../src/protocol/modern/meta.js';
import {
  CONSERVATIVE_CACHE,
  resultTypeOf,
  toLegacyResult,
  toModernError,
  toModernResult,
} from '../../src/protocol/modern/results.js';

const serverInfo = { name: 'upstream', version: '1.2.3' };
const text = { content: [{ type: 'text', text: 'hi' }] };

describe('toModernResult', () => {
  it('2026-07-28 basic/index ResultType: the result MUST include resultType; a legacy result is complete', () => {
    expect(toModernResult('tools/call', text)).toEqual({ ...text, resultType: 'complete' });
  });

  it('keeps the resultType of a modern upstream, and adds no cache hints to an interim result', () => {
    const interim = { resultType: 'input_required', requestState: 's' };
    expect(toModernResult('resources/read', interim)).toEqual(interim);
    expect(toModernResult('tools/call', { resultType: 'task', taskId: 't' }).resultType).toBe('task');
  });

  it('2026-07-28 basic/index per-response fields: SHOULD carry io.modelcontextprotocol/serverInfo in _meta', () => {
    const result = toModernResult('tools/call', { ...text, _meta: { 'com.example/x': 1 } }, { serverInfo });
    expect(result._meta).toEqual({ 'com.example/x': 1, [SERVER_INFO_META]: serverInfo });
  });

  it('drops the 2025-11-25 related-task key, which the tasks extension does not have', () => {
    const result = toModernResult('tools/call', { ...text, _meta: { [RELATED_TASK_META]: { taskId: 't' } } });
    expect(result).not.toHaveProperty('_meta');
  });

  it.each(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read'])(
    '2026-07-28 server/utilities/caching Cacheable Results: a complete %s result MUST carry ttlMs and cacheScope',
    (method) => {
      expect(toModernResult(method, {})).toMatchObject(CONSERVATIVE_CACHE);
      expect(toModernResult(method, {}, { cache: { ttlMs: 5000, cacheScope: 'public' } })).toMatchObject({
        ttlMs: 5000,
        cacheScope: 'public',
      });
      expect(toModernResult(method, { ttlMs: 9, cacheScope: 'public' })).toMatchObject({
        ttlMs: 9,
        cacheScope: 'public',
      });
    },
  );

  it('2026-07-28 caching TTL: servers MUST provide ttlMs >= 0', () => {
    expect(toModernResult('tools/list', { ttlMs: -1 }).ttlMs).toBe(0);
  });

  it('gives conservative hints by default: immediately stale, never shared across callers', () => {
    expect(CONSERVATIVE_CACHE).toEqual({ ttlMs: 0, cacheScope: 'private' });
    expect(toModernResult('tools/call', text)).not.toHaveProperty('ttlMs');
  });

  it('2026-07-28 schema Tool: tools/list for a modern client has no execution (taskSupport)', () => {
    const tools = [
      { name: 'a', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
      { name: 'b', inputSchema: { type: 'object' } },
    ];
    expect(toModernResult('tools/list', { tools }).tools).toEqual([
      { name: 'a', inputSchema: { type: 'object' } },
      { name: 'b', inputSchema: { type: 'object' } },
    ]);
    expect(tools[0]).toHaveProperty('execution');
  });
});

describe('toLegacyResult', () => {
  it('2026-07-28 basic/index ResultType: an absent resultType is complete, so a legacy client gets none', () => {
    expect(resultTypeOf(text)).toBe('complete');
    expect(resultTypeOf({ resultType: 'input_required' })).toBe('input_required');
    expect(toLegacyResult({ ...text, resultType: 'complete' })).toEqual(text);
  });
});

describe('toModernError', () => {
  it('2026-07-28 basic/index Error Codes: MUST NOT emit -32002; resource not found is -32602', () => {
    const notFound = { code: -32002, message: 'Resource not found', data: { uri: 'file:///x' } };
    expect(toModernError('resources/read', notFound)).toEqual({ ...notFound, code: ErrorCode.InvalidParams });
    expect(toModernError('tools/call', { code: -32601, message: 'm' })).toEqual({
      code: -32601,
      message: 'm',
    });
  });

  it('basic/index Error Codes: codes of the reserved range the spec does not define leave it by +1000', () => {
    const moved = (code: number) => toModernError('tools/call', { code, message: 'x' }).code;
    expect(moved(ErrorCode.UpstreamUnavailable)).toBe(-31000);
    expect(moved(ErrorCode.LimitExceeded)).toBe(-31001);
    expect(moved(-32002)).toBe(-31002);
    expect(moved(-32042)).toBe(-31042);
    expect(moved(ErrorCode.MissingRequiredClientCapability)).toBe(-32021);
    expect(moved(ErrorCode.HeaderMismatch)).toBe(-32020);
    expect(moved(ErrorCode.InvalidParams)).toBe(-32602);
    expect(moved(-32100)).toBe(-32100);
  });
});

describe('buildDiscoverResult', () => {
  const upstream = {
    capabilities: {
      tools: { listChanged: true },
      resources: {},
      tasks: { requests: { tools: { call: {} } } },
      extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html'] } },
    },
    serverInfo,
    instructions: 'Use get_weather.',
  };
  const options = {
    supportedVersions: ['2026-07-28', '2025-11-25'],
    cache: { ttlMs: 60_000, cacheScope: 'private' as const },
  };

  it('2026-07-28 server/discover DiscoverResult: versions, capabilities, serverInfo in _meta, instructions, cache hints', () => {
    expect(buildDiscoverResult(upstream, { ...options, extensions: { [TASKS_EXTENSION]: {} } })).toEqual({
      resultType: 'complete',
      supportedVersions: ['2026-07-28', '2025-11-25'],
      capabilities: {
        tools: { listChanged: true },
        resources: {},
        extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html'] }, [TASKS_EXTENSION]: {} },
      },
      _meta: { [SERVER_INFO_META]: serverInfo },
      instructions: 'Use get_weather.',
      ttlMs: 60_000,
      cacheScope: 'private',
    });
  });

  it('drops the 2025 tasks capability, which the 2026-07-28 ServerCapabilities does not have', () => {
    const result = buildDiscoverResult({ capabilities: { tasks: {} }, serverInfo }, options);
    expect(result.capabilities).toEqual({});
    expect(result).not.toHaveProperty('instructions');
  });

  it('can answer as taskgate instead of the upstream', () => {
    const taskgate = { name: 'taskgate', version: '0.1.0' };
    expect(buildDiscoverResult(upstream, { ...options, serverInfo: taskgate })._meta).toEqual({
      [SERVER_INFO_META]: taskgate,
    });
  });

  it('2026-07-28 server/utilities/caching: MUST provide a ttlMs >= 0', () => {
    expect(
      buildDiscoverResult(upstream, { ...options, cache: { ttlMs: -5, cacheScope: 'public' } }).ttlMs,
    ).toBe(0);
    expect(
      buildDiscoverResult(upstream, { ...options, cache: { ttlMs: 0.5, cacheScope: 'public' } }).ttlMs,
    ).toBe(0);
  });
});
