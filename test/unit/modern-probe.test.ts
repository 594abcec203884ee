import { describe, expect, it } from 'vitest';
import {
  chooseVersion,
  httpProbeVerdict,
  isRecognisedModernError,
  stdioProbeVerdict,
} from '../../src/protocol/modern/probe.js';

const discover = {
  resultType: 'complete',
  supportedVersions: ['2026-07-28'],
  capabilities: { tools: {} },
  ttlMs: 0,
  cacheScope: 'public',
};
const unsupported = {
  code: -32022,
  message: 'Unsupported protocol version',
  data: { supported: ['2027-01-01', '2025-11-25'], requested: '2026-07-28' },
};
const response = (body: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 1, ...body });

describe('stdioProbeVerdict', () => {
  it('2026-07-28 transports/stdio Backward Compatibility: a DiscoverResult means modern', () => {
    expect(stdioProbeVerdict(response({ result: discover }))).toEqual({
      era: 'modern',
      supportedVersions: ['2026-07-28'],
    });
  });

  it('2026-07-28 transports/stdio Backward Compatibility: a recognised modern error means modern; do not fall back', () => {
    expect(stdioProbeVerdict(response({ error: unsupported }))).toEqual({
      era: 'modern',
      supportedVersions: ['2027-01-01', '2025-11-25'],
    });
    expect(stdioProbeVerdict(response({ error: { code: -32021, message: 'm', data: {} } }))).toEqual({
      era: 'modern',
    });
  });

  it.each([
    ['-32601', { error: { code: -32601, message: 'Method not found' } }],
    ['-32602', { error: { code: -32602, message: 'Invalid params' } }],
    ['an implementation-defined code', { error: { code: -32000, message: 'Not initialized' } }],
    ['a result that is no DiscoverResult', { result: {} }],
  ])(
    '2026-07-28 transports/stdio Backward Compatibility: MUST NOT key the fallback to one code: %s is legacy',
    (_, body) => {
      expect(stdioProbeVerdict(response(body)).era).toBe('legacy');
    },
  );

  it('2026-07-28 transports/stdio Backward Compatibility: no answer within the timeout is legacy', () => {
    expect(stdioProbeVerdict(undefined).era).toBe('legacy');
    expect(stdioProbeVerdict('not json-rpc').era).toBe('legacy');
  });
});

describe('httpProbeVerdict', () => {
  it('2026-07-28 basic/versioning Compatibility Matrix: a modern request that succeeds stays modern', () => {
    expect(httpProbeVerdict(200, response({ result: { resultType: 'complete', tools: [] } }))).toEqual({
      era: 'modern',
    });
  });

  it('a success without resultType was served under legacy semantics: legacy', () => {
    expect(httpProbeVerdict(200, response({ result: { tools: [] } })).era).toBe('legacy');
  });

  it('2026-07-28 transports/streamable-http Backward Compatibility: a 400 with a recognised modern error is modern', () => {
    expect(httpProbeVerdict(400, response({ error: unsupported }))).toEqual({
      era: 'modern',
      supportedVersions: ['2027-01-01', '2025-11-25'],
    });
    expect(httpProbeVerdict(400, response({ error: { code: -32020, message: 'Header mismatch' } })).era).toBe(
      'modern',
    );
  });

  it('2026-07-28 transports/streamable-http Protocol Version Header: 404 with -32601 is a modern unknown method', () => {
    expect(
      httpProbeVerdict(404, response({ error: { code: -32601, message: 'Method not found' } })).era,
    ).toBe('modern');
  });

  it.each([
    [400, response({ error: { code: -32000, message: 'Bad Request: No valid session ID provided' } })],
    [400, undefined],
    [404, undefined],
    [405, undefined],
    [200, response({ error: { code: -32601, message: 'Method not found' } })],
  ])(
    '2026-07-28 transports/streamable-http Backward Compatibility: HTTP %i without a recognised modern error falls back (legacy)',
    (status, body) => {
      expect(httpProbeVerdict(status, body).era).toBe('legacy');
    },
  );

  it.each([401, 403, 500, 503])('HTTP %i says nothing about the era: unknown, not cached', (status) => {
    expect(httpProbeVerdict(status, response({ error: unsupported })).era).toBe('unknown');
  });
});

describe('helpers', () => {
  it('recognises exactly the codes of the reserved sub-range that 2026-07-28 defines', () => {
    expect([-32020, -32021, -32022].every((code) => isRecognisedModernError({ code, message: '' }))).toBe(
      true,
    );
    expect(
      [-32002, -32023, -32042, -32601].some((code) => isRecognisedModernError({ code, message: '' })),
    ).toBe(false);
  });

  it('2026-07-28 basic/versioning negotiation: selects a mutually supported version, ours in our order', () => {
    expect(chooseVersion(['2026-07-28', '2025-11-25'], ['2025-11-25', '2026-07-28'])).toBe('2026-07-28');
    expect(chooseVersion(['2026-07-28', '2025-11-25'], ['2027-01-01', '2025-11-25'])).toBe('2025-11-25');
    expect(chooseVersion(['2026-07-28'], ['2027-01-01'])).toBeUndefined();
  });
});
