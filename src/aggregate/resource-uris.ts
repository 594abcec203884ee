/**
 * The URI rule for the resources of a server mounted with a prefix: the client sees
 * `taskgate:{server}/{uri}`, the server's own URI (or URI template) after it character for character, so
 * that taking the prefix off gives that URI back exactly and a read, subscription or completion names its
 * server by the URI alone. Why this rule rather than FastMCP's `scheme://prefix/path`: the README's "Many
 * servers behind one endpoint".
 *
 * What the client may read back is rewritten too: a read's contents, the resource links and embedded
 * resources of a tool's result or a prompt's messages, and notifications/resources/updated.
 */
import { isObject, type JsonObject } from '../protocol/messages.js';

const SCHEME = 'taskgate:';

/** A URI the client gave, as the server it names gave it. */
export interface ServerUri {
  server: string;
  uri: string;
}

export function outerUri(server: string, uri: string): string {
  return `${SCHEME}${server}/${uri}`;
}

/** The server and its own URI of a URI outerUri gave for one of `prefixed`; undefined for any other URI. */
export function innerUri(uri: string, prefixed: ReadonlySet<string>): ServerUri | undefined {
  // A scheme is case-insensitive (RFC 3986 §3.1): a client may give it back in capitals.
  if (uri.slice(0, SCHEME.length).toLowerCase() !== SCHEME) return undefined;
  const rest = uri.slice(SCHEME.length);
  const slash = rest.indexOf('/');
  const server = rest.slice(0, slash);
  return slash > 0 && prefixed.has(server) ? { server, uri: rest.slice(slash + 1) } : undefined;
}

/** A listed resource (`uri`) or resource template (`uriTemplate`) of `server` under the rule. */
export function listedUnder(item: unknown, server: string): unknown {
  if (!isObject(item)) return item;
  if (typeof item.uri === 'string') return { ...item, uri: outerUri(server, item.uri) };
  if (typeof item.uriTemplate === 'string')
    return { ...item, uriTemplate: outerUri(server, item.uriTemplate) };
  return item;
}

/**
 * A result of `server` with the URIs it embeds under the rule: a read's `contents`, a tool result's
 * `content` blocks, a prompt's `messages`; undefined when it embeds none (its bytes can go as they are).
 */
export function withOuterUris(result: JsonObject, server: string): JsonObject | undefined {
  const contents = mapped(result.contents, (item) =>
    isObject(item) && typeof item.uri === 'string' ? { ...item, uri: outerUri(server, item.uri) } : item,
  );
  const content = mapped(result.content, (block) => outerBlock(block, server));
  const messages = mapped(result.messages, (message) => {
    if (!isObject(message)) return message;
    const block = outerBlock(message.content, server);
    return block === message.content ? message : { ...message, content: block };
  });
  if (contents === undefined && content === undefined && messages === undefined) return undefined;
  return {
    ...result,
    ...(contents === undefined ? {} : { contents }),
    ...(content === undefined ? {} : { content }),
    ...(messages === undefined ? {} : { messages }),
  };
}

/** notifications/resources/updated's params of `server` with their `uri` under the rule. */
export function withOuterUpdatedUri(params: JsonObject, server: string): JsonObject {
  return typeof params.uri === 'string' ? { ...params, uri: outerUri(server, params.uri) } : params;
}

/** A resource link or an embedded resource under the rule; any other content block as it is. */
function outerBlock(block: unknown, server: string): unknown {
  if (!isObject(block)) return block;
  if (block.type === 'resource_link' && typeof block.uri === 'string') {
    return { ...block, uri: outerUri(server, block.uri) };
  }
  const resource = block.resource;
  if (block.type === 'resource' && isObject(resource) && typeof resource.uri === 'string') {
    return { ...block, resource: { ...resource, uri: outerUri(server, resource.uri) } };
  }
  return block;
}

/**
 * `list` with each item through `each`, or undefined when it is not a list or no item changed (copied only
 * from the first change: most tool results embed no resource, and every call's result passes here).
 */
function mapped(list: unknown, each: (item: unknown) => unknown): unknown[] | undefined {
  if (!Array.isArray(list)) return undefined;
  let items: unknown[] | undefined;
  list.forEach((item: unknown, i) => {
    const after = each(item);
    if (after !== item) items ??= list.slice();
    if (items !== undefined) items[i] = after;
  });
  return items;
}
