/**
 * The routing headers of a modern Streamable HTTP request, checked against its body
 * (basic/transports/streamable-http.mdx "Request Metadata", "Value Encoding", "Server Validation"; ext-tasks
 * specification/draft/tasks.md "Streamable HTTP: Routing Headers"). Any failure is -32020 with HTTP 400.
 * A body without `_meta` protocolVersion, or without the field Mcp-Name mirrors, is left to the `_meta` and
 * params checks, which answer -32602 for it.
 * `Mcp-Param-*` headers need the tool's inputSchema and are not checked here.
 */
import { metaOf, type JsonObject } from '../messages.js';
import { HeaderMismatchError, ok, refused, type Checked } from './errors.js';
import { PROTOCOL_VERSION_META } from './meta.js';

/** Node's IncomingHttpHeaders, or any map of header names to values. */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

/** The body field that Mcp-Name mirrors, by method. */
const NAME_SOURCE: Readonly<Record<string, string>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

/** RFC 9110 field-value characters: visible ASCII, space, horizontal tab. */
const SAFE_VALUE = /^[\t\x20-\x7e]*$/;
const BASE64_SENTINEL = /^=\?base64\?(.*)\?=$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const SHOWN = 200;

export function checkModernHeaders(
  headers: HeaderMap,
  body: { method: string; params?: JsonObject | undefined },
): Checked<void> {
  const version = header(headers, 'mcp-protocol-version', 'MCP-Protocol-Version');
  if (!version.ok) return version;
  const bodyVersion = metaOf(body.params)?.[PROTOCOL_VERSION_META];
  if (typeof bodyVersion === 'string' && version.value !== bodyVersion) {
    return refused(differs('MCP-Protocol-Version', version.value, bodyVersion));
  }

  const method = header(headers, 'mcp-method', 'Mcp-Method');
  if (!method.ok) return method;
  if (method.value !== body.method) return refused(differs('Mcp-Method', method.value, body.method));

  const source = NAME_SOURCE[body.method];
  if (source === undefined) return ok(undefined);
  const name = header(headers, 'mcp-name', 'Mcp-Name');
  if (!name.ok) return name;
  const decoded = decodeSentinel(name.value);
  if (!decoded.ok) return decoded;
  const bodyName = body.params?.[source];
  if (typeof bodyName === 'string' && decoded.value !== bodyName) {
    return refused(differs('Mcp-Name', decoded.value, bodyName));
  }
  return ok(undefined);
}

/** Header names are case-insensitive; a header given twice is malformed. */
function header(headers: HeaderMap, lower: string, shown: string): Checked<string> {
  const values = Object.entries(headers)
    .filter(([name, value]) => name.toLowerCase() === lower && value !== undefined)
    .flatMap(([, value]) => (typeof value === 'string' ? [value] : [...(value ?? [])]));
  if (values.length === 0) return refused(new HeaderMismatchError(`required header ${shown} is missing`));
  const [value] = values;
  if (values.length > 1 || value === undefined) {
    return refused(new HeaderMismatchError(`${shown} is given more than once`));
  }
  if (!SAFE_VALUE.test(value))
    return refused(new HeaderMismatchError(`${shown} contains invalid characters`));
  return ok(value);
}

/** `=?base64?…?=` carries a value that is not header-safe as base64 of its UTF-8. */
function decodeSentinel(value: string): Checked<string> {
  const encoded = BASE64_SENTINEL.exec(value)?.[1];
  if (encoded === undefined) return ok(value);
  if (!BASE64.test(encoded)) return refused(new HeaderMismatchError('Mcp-Name is not valid base64'));
  try {
    return ok(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(encoded, 'base64')));
  } catch {
    return refused(new HeaderMismatchError('Mcp-Name does not decode to UTF-8'));
  }
}

const differs = (name: string, headerValue: string, bodyValue: string): HeaderMismatchError =>
  new HeaderMismatchError(
    `${name} header value '${clip(headerValue)}' does not match body value '${clip(bodyValue)}'`,
  );

const clip = (value: string): string => (value.length > SHOWN ? `${value.slice(0, SHOWN)}…` : value);
