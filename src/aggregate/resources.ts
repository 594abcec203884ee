/**
 * The merged resources and resource templates, and which server a URI the client gives goes to. A server
 * mounted with a prefix has its URIs under the rule of src/aggregate/resource-uris.ts, which names the
 * server; one mounted without keeps its own, and a URI of those goes to the server that listed it, or whose
 * template it starts with (two of them listing one URI: the first one's, said once in the log). What they
 * listed is known from the pages the client was given, or from their whole lists (`complete`).
 */
import type { Logger } from 'pino';
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import type { ListReader } from './lists.js';
import type { Member } from './member.js';
import { innerUri, listedUnder } from './resource-uris.js';

export type ResourceList = 'resources/list' | 'resources/templates/list';

/** A URI the client gave: the server it goes to, and that server's own URI. */
export interface ResourceRoute {
  member: Member;
  uri: string;
}

export class ResourceRoutes {
  /** URI (or URI template) of a server without prefix → the server that listed it first. */
  private readonly owners = new Map<string, Member>();
  private readonly warned = new Set<string>();
  /** Every page of the lists of the servers without prefix has been taken since the last clear(). */
  private complete = false;

  constructor(
    private readonly logger: Logger,
    private readonly lists: ListReader,
  ) {}

  /** The page of the merged list `cursor` points at, each server's URIs as the client sees them. */
  async page(serving: readonly Member[], method: ResourceList, cursor: unknown): Promise<JsonObject> {
    const key = keyOf(method);
    const page = await this.lists.page(serving, method, key, cursor);
    const items: unknown[] = [];
    for (const { member, items: own } of page.lists) {
      if (member.prefixed) items.push(...own.map((item) => listedUnder(item, member.name)));
      else {
        this.take(member, own, serving);
        items.push(...own);
      }
    }
    return { [key]: items, ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }) };
  }

  /**
   * The server of a URI the client gave (of `members`, by the rule; else of the servers without prefix
   * that listed it; else the only server there is), with its own URI; a ProtocolError when none has it.
   */
  async route(uri: string, members: readonly Member[], serving: readonly Member[]): Promise<ResourceRoute> {
    const named = innerUri(uri, prefixedNames(members));
    if (named !== undefined) return { member: members.find((m) => m.name === named.server)!, uri: named.uri };
    const unprefixed = serving.filter((member) => !member.prefixed);
    if (this.find(uri) === undefined && !this.complete && unprefixed.length > 0) {
      for (const method of ['resources/list', 'resources/templates/list'] as const) {
        for (const { member, items } of await this.lists.whole(unprefixed, method, keyOf(method))) {
          this.take(member, items, serving);
        }
      }
      this.complete = true;
    }
    const found = this.find(uri);
    if (found !== undefined) return { member: found, uri };
    const [only, ...others] = serving;
    if (only !== undefined && others.length === 0) return { member: only, uri };
    throw new ProtocolError(ErrorCode.InvalidParams, `Resource ${JSON.stringify(uri)} not found`);
  }

  clear(): void {
    this.owners.clear();
    this.complete = false;
  }

  /** One server's (without prefix) listed resources or templates, remembered by URI. */
  private take(member: Member, items: readonly unknown[], serving: readonly Member[]): void {
    for (const item of items) {
      const uri = isObject(item) ? (item.uri ?? item.uriTemplate) : undefined;
      if (typeof uri !== 'string') continue;
      const owner = this.owners.get(uri);
      if (owner === undefined) this.owners.set(uri, member);
      if (this.warned.has(uri)) continue;
      if (owner !== undefined && owner !== member) {
        this.warned.add(uri);
        this.logger.warn(
          { uri, servers: [owner.name, member.name] },
          `the resource "${uri}" is listed by server "${owner.name}" and by server "${member.name}", both without prefix: it is read from "${owner.name}"`,
        );
      }
      const shadowing = innerUri(uri, prefixedNames(serving));
      if (shadowing !== undefined) {
        this.warned.add(uri);
        this.logger.warn(
          { uri, servers: [member.name, shadowing.server] },
          `the resource "${uri}" of server "${member.name}" (without prefix) has the form of server "${shadowing.server}"'s: it is read from "${shadowing.server}"`,
        );
      }
    }
  }

  /** The server without prefix that listed `uri`, or a template it starts with; undefined when none did. */
  private find(uri: string): Member | undefined {
    const exact = this.owners.get(uri);
    if (exact !== undefined) return exact;
    for (const [listed, member] of this.owners) {
      const stem = listed.split('{')[0]!;
      if (listed.includes('{') && stem !== '' && uri.startsWith(stem)) return member;
    }
    return undefined;
  }
}

function keyOf(method: ResourceList): string {
  return method === 'resources/list' ? 'resources' : 'resourceTemplates';
}

function prefixedNames(members: readonly Member[]): Set<string> {
  return new Set(members.filter((member) => member.prefixed).map((member) => member.name));
}
