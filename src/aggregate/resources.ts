/**
 * Which server a resource is read from: resource URIs reach the client as the servers list them (no
 * rewriting yet), so a URI goes to the server that listed it, or whose template it starts with; a URI two
 * servers list is the first one's, said once in the log. What is known comes from the pages the client
 * was given, or from every server's whole lists (`complete`).
 */
import type { Logger } from 'pino';
import { ErrorCode, ProtocolError } from '../protocol/errors.js';
import { isObject } from '../protocol/messages.js';
import type { Member } from './member.js';

export class ResourceRoutes {
  /** URI (or URI template) → the server that listed it first. */
  private readonly owners = new Map<string, Member>();
  private readonly warned = new Set<string>();

  constructor(private readonly logger: Logger) {}

  /** Every page of every server's resources and templates has been taken since the last clear(). */
  complete = false;

  /** One server's listed resources or templates, remembered by URI. */
  take(member: Member, items: readonly unknown[]): void {
    for (const item of items) {
      const uri = isObject(item) ? (item.uri ?? item.uriTemplate) : undefined;
      if (typeof uri !== 'string') continue;
      const owner = this.owners.get(uri);
      if (owner === undefined) this.owners.set(uri, member);
      else if (owner !== member && !this.warned.has(uri)) {
        this.warned.add(uri);
        this.logger.warn(
          { uri, servers: [owner.name, member.name] },
          `the resource "${uri}" is listed by server "${owner.name}" and by server "${member.name}": it is read from "${owner.name}"`,
        );
      }
    }
  }

  /** The server of `uri`, else the only server there is; a ProtocolError when no server listed it. */
  owner(uri: string, serving: readonly Member[]): Member {
    const found = this.find(uri);
    if (found !== undefined) return found;
    const [only, ...others] = serving;
    if (only !== undefined && others.length === 0) return only;
    throw new ProtocolError(ErrorCode.InvalidParams, `Resource ${JSON.stringify(uri)} not found`);
  }

  /** The server that listed `uri`, or a template it starts with; undefined when none did. */
  find(uri: string): Member | undefined {
    const exact = this.owners.get(uri);
    if (exact !== undefined) return exact;
    for (const [listed, member] of this.owners) {
      const stem = listed.split('{')[0]!;
      if (listed.includes('{') && stem !== '' && uri.startsWith(stem)) return member;
    }
    return undefined;
  }

  clear(): void {
    this.owners.clear();
    this.complete = false;
  }
}
