/**
 * The answers of several servers as one: their initialize results (capabilities as the union) and their
 * lists (each item under its server's name).
 */
import { isObject, setMember, type JsonObject } from '../protocol/messages.js';
import { NameCollisionError, type Names } from './names.js';

/** One server's answer to a request sent to every server. */
export interface Answer {
  server: string;
  result: JsonObject;
}

/** A and B as one: objects member by member, `true` wherever either says so, A's value otherwise. */
export function union(a: unknown, b: unknown): unknown {
  if (isObject(a) && isObject(b)) {
    const merged: JsonObject = { ...a };
    for (const [key, value] of Object.entries(b)) {
      setMember(merged, key, Object.hasOwn(merged, key) ? union(merged[key], value) : value);
    }
    return merged;
  }
  if (a === undefined) return b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return a || b;
  return a;
}

/**
 * One initialize result for the client: the servers' capabilities as the union (lists that change: servers
 * join late and go), the version they all
 * answered (the client's own when they differ: taskgate is the server it negotiates with), and each
 * server's instructions under its name.
 */
export function mergedInitialize(answers: Answer[], requestedVersion: unknown, version: string): JsonObject {
  let capabilities: unknown = {};
  for (const { result } of answers) capabilities = union(capabilities, result.capabilities ?? {});
  // The merged lists change as servers come and go, whatever each server's own do.
  const merged = capabilities as JsonObject;
  for (const key of ['tools', 'prompts', 'resources']) {
    if (isObject(merged[key])) merged[key] = { ...merged[key], listChanged: true };
  }
  const versions = new Set(answers.map(({ result }) => result.protocolVersion));
  const [only] = versions;
  const protocolVersion = versions.size === 1 ? only : requestedVersion;
  const instructions = answers
    .filter(({ result }) => typeof result.instructions === 'string' && result.instructions !== '')
    .map(({ server, result }) => `${server}: ${result.instructions as string}`);
  return {
    protocolVersion,
    capabilities,
    serverInfo: { name: 'taskgate', version },
    ...(instructions.length === 0 ? {} : { instructions: instructions.join('\n\n') }),
  };
}

/** Where a name in a merged list comes from. */
export interface Listed {
  server: string;
  name: string;
}

export interface MergedList {
  items: JsonObject[];
  /** Each outer name, with its server and the server's own name. */
  routes: Map<string, Listed>;
}

/** One server's tools or prompts, and which of them its filter exposes and the caller's rules show. */
export interface NamedList {
  server: string;
  prefixed: boolean;
  items: unknown[];
  exposes(name: string): boolean;
  shows(name: string): boolean;
}

/**
 * Tools or prompts of every server in one list: each renamed by `names`, those a server's filter hides
 * left out; a name two servers would both give is a NameCollisionError, unless the caller's rules hide it
 * (they judge the name both give alike): the first server's is kept, and nothing tells this caller of it.
 */
export function mergedNames(kind: 'tool' | 'prompt', lists: NamedList[], names: Names): MergedList {
  const items: JsonObject[] = [];
  const routes = new Map<string, Listed>();
  for (const { server, prefixed, items: own, exposes, shows } of lists) {
    for (const item of own) {
      if (!isObject(item) || typeof item.name !== 'string' || !exposes(item.name)) continue;
      const outer = names.outer(server, prefixed, item.name);
      const earlier = routes.get(outer);
      if (earlier !== undefined && !shows(item.name)) continue;
      if (earlier !== undefined) throw new NameCollisionError(kind, outer, earlier.server, server);
      routes.set(outer, { server, name: item.name });
      items.push(outer === item.name ? item : { ...item, name: outer });
    }
  }
  return { items, routes };
}
