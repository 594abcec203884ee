import { describe, expect, it } from 'vitest';
import { toJsonRpcError } from '../../src/tasks/wire-errors.js';
import type { Checked } from '../../src/protocol/modern/errors.js';
import {
  checkModernHeaders,
  checkParamHeaders,
  headerAnnotationProblem,
  headerParamsOf,
  paramHeadersOf,
  type HeaderMap,
} from '../../src/protocol/modern/headers.js';
import { PROTOCOL_VERSION_META } from '../../src/protocol/modern/meta.js';

const META = { [PROTOCOL_VERSION_META]: '2026-07-28' };
const call = { method: 'tools/call', params: { name: 'get_weather', arguments: {}, _meta: META } };
const good: HeaderMap = {
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'get_weather',
};
const base64 = (text: string) => `=?base64?${Buffer.from(text).toString('base64')}?=`;

function mismatch(checked: Checked<void>) {
  if (checked.ok) throw new Error('expected a refusal');
  return { ...toJsonRpcError(checked.error), status: checked.error.httpStatus };
}

describe('checkModernHeaders', () => {
  it('accepts headers that mirror the body', () => {
    expect(checkModernHeaders(good, call).ok).toBe(true);
  });

  it('2026-07-28 streamable-http Case Sensitivity: header names MUST be compared case-insensitively', () => {
    const headers = {
      'MCP-Protocol-Version': '2026-07-28',
      'Mcp-Method': 'tools/call',
      'MCP-NAME': 'get_weather',
    };
    expect(checkModernHeaders(headers, call).ok).toBe(true);
  });

  it('2026-07-28 streamable-http Protocol Version Header: a value not matching _meta MUST be -32020 with HTTP 400', () => {
    expect(mismatch(checkModernHeaders({ ...good, 'mcp-protocol-version': '2025-11-25' }, call))).toEqual({
      code: -32020,
      message:
        "Header mismatch: MCP-Protocol-Version header value '2025-11-25' does not match body value '2026-07-28'",
      status: 400,
    });
  });

  it.each(['mcp-protocol-version', 'mcp-method', 'mcp-name'])(
    '2026-07-28 streamable-http Server Validation: a missing required header %s MUST be -32020',
    (name) => {
      const { [name]: _dropped, ...headers } = good;
      const error = mismatch(checkModernHeaders(headers, call));
      expect(error).toMatchObject({ code: -32020, status: 400 });
      expect(error.message.toLowerCase()).toContain(`${name} is missing`);
    },
  );

  it('2026-07-28 streamable-http Server Validation: Mcp-Method MUST match the body method', () => {
    expect(mismatch(checkModernHeaders({ ...good, 'mcp-method': 'tools/list' }, call))).toMatchObject({
      code: -32020,
      message: "Header mismatch: Mcp-Method header value 'tools/list' does not match body value 'tools/call'",
    });
  });

  it('2026-07-28 streamable-http Server Validation: Mcp-Name MUST match params.name (spec example)', () => {
    const body = { method: 'prompts/get', params: { name: 'bar', _meta: META } };
    const headers = { ...good, 'mcp-method': 'prompts/get', 'mcp-name': 'foo' };
    expect(mismatch(checkModernHeaders(headers, body)).message).toBe(
      "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'",
    );
  });

  it('2026-07-28 streamable-http Standard Request Headers: Mcp-Name mirrors params.uri on resources/read', () => {
    const uri = 'file:///projects/myapp/config.json';
    const body = { method: 'resources/read', params: { uri, _meta: META } };
    const headers = { ...good, 'mcp-method': 'resources/read', 'mcp-name': uri };
    expect(checkModernHeaders(headers, body).ok).toBe(true);
    expect(checkModernHeaders({ ...headers, 'mcp-name': 'file:///other' }, body).ok).toBe(false);
  });

  it.each(['tasks/get', 'tasks/update', 'tasks/cancel'])(
    'ext-tasks Streamable HTTP Routing Headers: %s MUST carry Mcp-Name = params.taskId',
    (method) => {
      const body = { method, params: { taskId: 'abc', _meta: META } };
      const headers = { ...good, 'mcp-method': method, 'mcp-name': 'abc' };
      expect(checkModernHeaders(headers, body).ok).toBe(true);
      expect(checkModernHeaders({ ...headers, 'mcp-name': 'other' }, body).ok).toBe(false);
      const { 'mcp-name': _dropped, ...without } = headers;
      expect(checkModernHeaders(without, body).ok).toBe(false);
    },
  );

  it('methods without a name need no Mcp-Name', () => {
    const body = { method: 'tools/list', params: { _meta: META } };
    expect(
      checkModernHeaders({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' }, body).ok,
    ).toBe(true);
  });

  it('2026-07-28 streamable-http Value Encoding: servers MUST decode a Base64 Mcp-Name before comparing', () => {
    const body = { ...call, params: { ...call.params, name: 'Hello, 世界' } };
    expect(checkModernHeaders({ ...good, 'mcp-name': base64('Hello, 世界') }, body).ok).toBe(true);
    expect(checkModernHeaders({ ...good, 'mcp-name': base64('Hello') }, body).ok).toBe(false);
    const literal = { ...call, params: { ...call.params, name: '=?base64?literal?=' } };
    expect(checkModernHeaders({ ...good, 'mcp-name': base64('=?base64?literal?=') }, literal).ok).toBe(true);
  });

  it.each([
    ['invalid base64', '=?base64?not base64!?='],
    ['bytes that are not UTF-8', `=?base64?${Buffer.from([0xff, 0xfe]).toString('base64')}?=`],
    ['characters outside the header-safe set', 'get_weather\u0001'],
  ])(
    '2026-07-28 streamable-http Server Validation: a malformed header value (%s) MUST be -32020',
    (_, value) => {
      expect(mismatch(checkModernHeaders({ ...good, 'mcp-name': value }, call))).toMatchObject({
        code: -32020,
      });
    },
  );

  it('a header given twice is malformed', () => {
    expect(
      mismatch(checkModernHeaders({ ...good, 'mcp-method': ['tools/call', 'tools/call'] }, call)).message,
    ).toContain('more than once');
  });

  it('leaves a body without the mirrored fields to the _meta and params checks (-32602)', () => {
    expect(checkModernHeaders(good, { method: 'tools/call', params: {} }).ok).toBe(true);
  });

  it('clips long values in the message', () => {
    const long = 'x'.repeat(5000);
    expect(mismatch(checkModernHeaders({ ...good, 'mcp-name': long }, call)).message.length).toBeLessThan(
      600,
    );
  });
});

describe('Mcp-Param-* headers against x-mcp-header parameters (streamable-http.mdx "Custom Headers")', () => {
  const schema = {
    type: 'object',
    properties: {
      region: { type: 'string', 'x-mcp-header': 'Region' },
      limit: { type: 'integer', 'x-mcp-header': 'Limit' },
      dry: { type: 'boolean', 'x-mcp-header': 'Dry' },
      where: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } },
      listed: { type: 'array', items: { type: 'object', properties: { no: { 'x-mcp-header': 'No' } } } },
      query: { type: 'string' },
    },
  };
  const params = headerParamsOf(schema);
  const check = (args: unknown, headers: HeaderMap) =>
    checkParamHeaders(params, args, paramHeadersOf(headers));

  it('finds the annotated parameters through properties chains only (not through items)', () => {
    expect(params.map(({ path, header }) => [path.join('.'), header])).toEqual([
      ['region', 'Mcp-Param-Region'],
      ['limit', 'Mcp-Param-Limit'],
      ['dry', 'Mcp-Param-Dry'],
      ['where.zone', 'Mcp-Param-Zone'],
    ]);
  });

  it('accepts headers that mirror the arguments: any case of name, base64 decoded, integers as numbers', () => {
    const args = { region: 'Hello, 世界', limit: 42, dry: false, where: { zone: 'b' }, query: 'q' };
    const headers = {
      'mcp-param-region': base64('Hello, 世界'),
      'MCP-PARAM-LIMIT': '42.0',
      'mcp-param-dry': 'false',
      'mcp-param-zone': 'b',
      'mcp-param-unknown': 'ignored',
    };
    expect(check(args, headers).ok).toBe(true);
    // Without the sentinel's suffix the value is a literal.
    expect(check({ region: '=?base64?SGk=' }, { 'mcp-param-region': '=?base64?SGk=' }).ok).toBe(true);
  });

  it.each([
    [16, '16'],
    [16, '16.00'],
    [-7, '-7'],
    [-7, '-7.0'],
    [0, '0'],
    [0, '-0'],
    [2 ** 53 - 1, '9007199254740991'],
    [-(2 ** 53 - 1), '-9007199254740991'],
  ])('accepts %d in the decimal spelling %j (streamable-http.mdx "Server Validation")', (limit, spelled) => {
    expect(check({ limit }, { 'mcp-param-limit': spelled }).ok).toBe(true);
  });

  it('a value with no argument (or a null one) expects no header', () => {
    expect(check({ query: 'q', region: null }, {}).ok).toBe(true);
  });

  it.each<[string, object, HeaderMap, string]>([
    ['a value in the body without its header', { region: 'us' }, {}, 'is missing'],
    ['a header that differs', { region: 'us' }, { 'mcp-param-region': 'eu' }, 'does not match'],
    ['a header with no value in the body', {}, { 'mcp-param-region': 'us' }, 'does not match'],
    [
      'bad base64 padding',
      { region: 'Hello' },
      { 'mcp-param-region': '=?base64?SGVsbG8?=' },
      'not valid base64',
    ],
    ['an integer that is not a number', { limit: 1 }, { 'mcp-param-limit': 'one' }, 'does not match'],
    ['a header given twice', { region: 'us' }, { 'mcp-param-region': ['us', 'us'] }, 'more than once'],
    ...['0x10', '1.6e1', '+16', '0016', '0b10000', ' 16', '16.', '16.5', '-16', ''].map(
      (spelled): [string, object, HeaderMap, string] => [
        `16 spelled '${spelled}'`,
        { limit: 16 },
        { 'mcp-param-limit': spelled },
        'does not match',
      ],
    ),
    [
      '2^53 + 1, which a float reads as 2^53',
      { limit: 2 ** 53 },
      { 'mcp-param-limit': '9007199254740993' },
      'not an integer within',
    ],
    [
      'an integer outside the safe range, even spelled exactly',
      { limit: 2 ** 53 },
      { 'mcp-param-limit': '9007199254740992' },
      'not an integer within',
    ],
  ])('refuses %s with -32020 and HTTP 400', (_, args, headers, words) => {
    const refusal = mismatch(check(args, headers));
    expect(refusal).toMatchObject({ code: -32020, status: 400 });
    expect(refusal.message).toContain(words);
  });
});

describe('x-mcp-header annotations a client must refuse (streamable-http.mdx "Schema Extension")', () => {
  const withProperty = (property: object) => ({ type: 'object', properties: { p: property } });

  it('accepts string, integer and boolean parameters reached through properties, and a parameter named x-mcp-header', () => {
    expect(
      headerAnnotationProblem(withProperty({ type: 'string', 'x-mcp-header': 'Region' })),
    ).toBeUndefined();
    expect(
      headerAnnotationProblem({
        type: 'object',
        properties: { 'x-mcp-header': { type: 'string' }, n: { type: 'integer', 'x-mcp-header': 'N' } },
      }),
    ).toBeUndefined();
    expect(headerAnnotationProblem({ type: 'object' })).toBeUndefined();
  });

  it.each([
    ['an empty name', withProperty({ type: 'string', 'x-mcp-header': '' }), 'not an HTTP header name'],
    [
      'a name with a space',
      withProperty({ type: 'string', 'x-mcp-header': 'A B' }),
      'not an HTTP header name',
    ],
    [
      'a name with CR LF',
      withProperty({ type: 'string', 'x-mcp-header': 'A\r\nB' }),
      'not an HTTP header name',
    ],
    [
      'a number parameter',
      withProperty({ type: 'number', 'x-mcp-header': 'N' }),
      'not a string, integer or boolean',
    ],
    ['a non-string name', withProperty({ type: 'string', 'x-mcp-header': 7 }), 'not a string'],
    [
      'names equal but for case',
      {
        type: 'object',
        properties: {
          a: { type: 'string', 'x-mcp-header': 'Id' },
          b: { type: 'string', 'x-mcp-header': 'ID' },
        },
      },
      'given twice',
    ],
    [
      'one inside items',
      withProperty({
        type: 'array',
        items: { type: 'object', properties: { q: { type: 'string', 'x-mcp-header': 'Q' } } },
      }),
      'reached through properties alone',
    ],
    [
      'one inside anyOf',
      withProperty({ anyOf: [{ type: 'string', 'x-mcp-header': 'Q' }] }),
      'reached through properties alone',
    ],
  ])('refuses %s', (_, schema, words) => {
    expect(headerAnnotationProblem(schema)).toContain(words);
  });
});
