/**
 * The routing headers of a modern Streamable HTTP request, checked against its body
 * (basic/transports/streamable-http.mdx "Request Metadata", "Value Encoding", "Server Validation"; ext-tasks
 * specification/draft/tasks.md "Streamable HTTP: Routing Headers"). Any failure is -32020 with HTTP 400.
 * A body without `_meta` protocolVersion, or without the field Mcp-Name mirrors, is left to the `_meta` and
 * params checks, which answer -32602 for it.
 * `Mcp-Param-*` headers need the tool's inputSchema: `headerParamsOf` reads its `x-mcp-header` parameters
 * (server/tools.mdx "x-mcp-header"), `checkParamHeaders` holds a tools/call to them.
 */
import { isObject, metaOf, type JsonObject } from '../messages.js';
import { HeaderMismatchError, ok, refused, type Checked } from './errors.js';
import { PROTOCOL_VERSION_META } from './meta.js';

/** Node's IncomingHttpHeaders, or any map of header names to values. */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

/** The body field that Mcp-Name mirrors, by method. */
export const NAME_SOURCE: Readonly<Record<string, string>> = {
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
  const decoded = decodeSentinel(name.value, 'Mcp-Name');
  if (!decoded.ok) return decoded;
  const bodyName = body.params?.[source];
  if (typeof bodyName === 'string' && decoded.value !== bodyName) {
    return refused(differs('Mcp-Name', decoded.value, bodyName));
  }
  return ok(undefined);
}

/** Header names are case-insensitive; a header given twice is malformed. */
function header(headers: HeaderMap, lower: string, shown: string): Checked<string> {
  // Node gives every name in lower case: one lookup, and a walk only for maps that spell names otherwise.
  const found = headers[lower];
  if (typeof found === 'string') return safeValue(found, shown);
  const values =
    found !== undefined
      ? [...found]
      : Object.entries(headers)
          .filter(([name, value]) => name.toLowerCase() === lower && value !== undefined)
          .flatMap(([, value]) => (typeof value === 'string' ? [value] : [...(value ?? [])]));
  if (values.length === 0) return refused(new HeaderMismatchError(`required header ${shown} is missing`));
  const [value] = values;
  if (values.length > 1 || value === undefined) {
    return refused(new HeaderMismatchError(`${shown} is given more than once`));
  }
  return safeValue(value, shown);
}

function safeValue(value: string, shown: string): Checked<string> {
  if (!SAFE_VALUE.test(value))
    return refused(new HeaderMismatchError(`${shown} contains invalid characters`));
  return ok(value);
}

/** `=?base64?…?=` carries a value that is not header-safe as base64 of its UTF-8. */
function decodeSentinel(value: string, shown: string): Checked<string> {
  // Most values are plain: no regex run for them.
  if (!value.startsWith('=?base64?')) return ok(value);
  const encoded = BASE64_SENTINEL.exec(value)?.[1];
  if (encoded === undefined) return ok(value);
  if (!BASE64.test(encoded)) return refused(new HeaderMismatchError(`${shown} is not valid base64`));
  try {
    return ok(new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(encoded, 'base64')));
  } catch {
    return refused(new HeaderMismatchError(`${shown} does not decode to UTF-8`));
  }
}

/** A tool parameter its inputSchema mirrors into a header: where it sits in the arguments, and the header. */
export interface HeaderParam {
  /** The chain of `properties` keys from the schema root. */
  path: readonly string[];
  /** `Mcp-Param-{name}` as the schema spells it, for messages. */
  header: string;
  type: unknown;
}

/** Header params nested deeper than this are not looked for (a schema is bounded by the upstream's lists). */
const MAX_DEPTH = 16;

/** The `x-mcp-header` parameters of an inputSchema, reachable through `properties` keys only. */
export function headerParamsOf(inputSchema: unknown, path: readonly string[] = []): HeaderParam[] {
  const properties = isObject(inputSchema) ? inputSchema.properties : undefined;
  if (!isObject(properties) || path.length >= MAX_DEPTH) return [];
  return Object.entries(properties).flatMap(([key, property]) => {
    if (!isObject(property)) return [];
    const here = [...path, key];
    const name = property['x-mcp-header'];
    const own =
      typeof name === 'string' ? [{ path: here, header: `Mcp-Param-${name}`, type: property.type }] : [];
    return [...own, ...headerParamsOf(property, here)];
  });
}

/** RFC 9110 `token`: what a header name is made of. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const MIRRORED_TYPES: ReadonlySet<unknown> = new Set(['string', 'integer', 'boolean']);

/**
 * Why a tool's `x-mcp-header` annotations break the rules a client over Streamable HTTP must hold them to
 * (streamable-http.mdx "Schema Extension": such a tool is left out of tools/list); undefined when they do
 * not.
 */
export function headerAnnotationProblem(inputSchema: unknown): string | undefined {
  const params = headerParamsOf(inputSchema);
  if (annotationsIn(inputSchema, false, 0) > params.length) {
    return 'an x-mcp-header that is not a string, or not on a property reached through properties alone';
  }
  const seen = new Set<string>();
  for (const param of params) {
    const name = param.header.slice('Mcp-Param-'.length);
    if (!TOKEN.test(name)) return `x-mcp-header "${name}" is not an HTTP header name`;
    if (seen.has(name.toLowerCase())) return `x-mcp-header "${name}" is given twice`;
    seen.add(name.toLowerCase());
    if (!MIRRORED_TYPES.has(param.type)) {
      return `x-mcp-header "${name}" is on a parameter that is not a string, integer or boolean`;
    }
  }
  return undefined;
}

/** Every `x-mcp-header` key in a schema; the keys of a `properties` map are names, not keywords. */
function annotationsIn(node: unknown, isPropertyMap: boolean, depth: number): number {
  if (depth > 64 || typeof node !== 'object' || node === null) return 0;
  let count = 0;
  for (const [key, value] of Object.entries(node)) {
    if (!isPropertyMap && !Array.isArray(node) && key === 'x-mcp-header') count++;
    count += annotationsIn(value, !isPropertyMap && key === 'properties' && isObject(value), depth + 1);
  }
  return count;
}

const PARAM_PREFIX = 'mcp-param-';

type ParamHeaders = ReadonlyMap<string, string | readonly string[]>;

/** What a request without `Mcp-Param-*` headers (nearly every one) gives: one Map for all, not one a call. */
const NO_PARAM_HEADERS: ParamHeaders = new Map();

/** The `Mcp-Param-*` headers of a request, by lower-case name. */
export function paramHeadersOf(headers: HeaderMap): ParamHeaders {
  let found: Map<string, string | readonly string[]> | undefined;
  for (const name of Object.keys(headers)) {
    // Most headers are told apart by their length or first letter, without a lower-cased copy of each.
    if (name.length < PARAM_PREFIX.length || (name[0] !== 'm' && name[0] !== 'M')) continue;
    const lower = name.toLowerCase();
    const value = headers[name];
    if (value !== undefined && lower.startsWith(PARAM_PREFIX)) (found ??= new Map()).set(lower, value);
  }
  return found ?? NO_PARAM_HEADERS;
}

/**
 * A tools/call's arguments against the headers that mirror them (streamable-http.mdx "Server Behavior for
 * Custom Headers"): a value in the body needs its header, decoded equal to it (integers compared as
 * numbers); a header needs the value. Headers the tool does not declare are ignored.
 */
export function checkParamHeaders(
  params: readonly HeaderParam[],
  args: unknown,
  given: ParamHeaders,
): Checked<void> {
  for (const param of params) {
    const value = valueAt(args, param.path);
    const raw = given.get(param.header.toLowerCase());
    if (raw === undefined) {
      if (value === undefined || value === null) continue;
      return refused(
        new HeaderMismatchError(
          `required header ${param.header} is missing: the arguments hold ${param.path.join('.')}`,
        ),
      );
    }
    if (typeof raw !== 'string')
      return refused(new HeaderMismatchError(`${param.header} is given more than once`));
    if (!SAFE_VALUE.test(raw))
      return refused(new HeaderMismatchError(`${param.header} contains invalid characters`));
    const decoded = decodeSentinel(raw, param.header);
    if (!decoded.ok) return decoded;
    if (typeof value === 'number' && !Number.isSafeInteger(value)) {
      return refused(
        new HeaderMismatchError(
          `${param.header} mirrors ${param.path.join('.')}, which is not an integer within ±(2^53−1)`,
        ),
      );
    }
    if (!mirrors(decoded.value, value)) {
      const body = value === undefined || value === null ? '(none)' : String(value);
      return refused(differs(param.header, decoded.value, body));
    }
  }
  return ok(undefined);
}

function mirrors(headerValue: string, value: unknown): boolean {
  if (typeof value === 'string') return headerValue === value;
  if (typeof value === 'boolean') return headerValue === String(value);
  if (typeof value === 'number') return mirrorsInteger(headerValue, value);
  return false;
}

/** A decimal integer, optionally with a zero fraction ("Server Validation": `42.0` and `42` are equal). */
const DECIMAL_INTEGER = /^(-?)(0|[1-9][0-9]*)(?:\.0+)?$/;

/**
 * An integer header holds the body's value in decimal ("Value Encoding"), and the value is a safe integer
 * ("Schema Extension"): compared digit by digit, so no other spelling (`0x10`, `1.6e1`, `+16`, `0016`) and
 * no float rounding (`9007199254740993` read as 2^53) lets a router and the server read two values.
 */
function mirrorsInteger(headerValue: string, value: number): boolean {
  const spelled = DECIMAL_INTEGER.exec(headerValue);
  if (spelled === null) return false;
  const [, sign, digits] = spelled;
  if (digits === '0') return value === 0;
  return digits === String(Math.abs(value)) && sign === (value < 0 ? '-' : '');
}

/**
 * What a client sends for a header that carries `value` (streamable-http.mdx "Value Encoding"): as it is
 * when it is plain header-safe ASCII, else `=?base64?…?=` of its UTF-8.
 */
export function encodeHeaderValue(value: string): string {
  const plain = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) && !BASE64_SENTINEL.test(value);
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** The `Mcp-Param-*` headers a client sends for a tools/call with these arguments. */
export function paramHeaderValues(params: readonly HeaderParam[], args: unknown): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const param of params) {
    const value = valueAt(args, param.path);
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      headers[param.header] = encodeHeaderValue(String(value));
    }
  }
  return headers;
}

function valueAt(args: unknown, path: readonly string[]): unknown {
  let here = args;
  for (const key of path) {
    if (!isObject(here)) return undefined;
    here = here[key];
  }
  return here;
}

const differs = (name: string, headerValue: string, bodyValue: string): HeaderMismatchError =>
  new HeaderMismatchError(
    `${name} header value '${clip(headerValue)}' does not match body value '${clip(bodyValue)}'`,
  );

const clip = (value: string): string => (value.length > SHOWN ? `${value.slice(0, SHOWN)}…` : value);
