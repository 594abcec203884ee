/**
 * The lists asked of every server (tools, prompts, resources, resource templates): for the client, a page
 * of each server behind one opaque cursor (src/aggregate/cursor.ts), each server paging as it does; for the
 * aggregator's own routing, every page of each, unnarrowed by the caller's auth.rules
 * (Member.askUnnarrowed), so that a name they hide reaches its server to be refused there. A server still
 * silent `graceMs` after the first answer is left out of either (logged), as is one that fails.
 */
import type { Logger } from 'pino';
import { ErrorCode } from '../protocol/errors.js';
import { decodeCursor, encodeCursor, type Position } from './cursor.js';
import { gathered } from './fan-out.js';
import type { Member, Outcome } from './member.js';

/** One server's part of a list: its items as it gave them. */
export interface ServerList {
  member: Member;
  items: unknown[];
}

export interface Page {
  lists: ServerList[];
  /** Where the servers with more go on; undefined when none has more. */
  nextCursor?: string;
}

/** Pages of one server's whole list at most (a server whose cursors never end is cut there). */
const MAX_PAGES = 1_000;

export class ListReader {
  constructor(
    private readonly logger: Logger,
    private readonly graceMs: number,
  ) {}

  /** The page `cursor` points at (the first without one): the next page of each server that has more. */
  async page(serving: readonly Member[], method: string, key: string, cursor: unknown): Promise<Page> {
    const position: Position =
      cursor === undefined ? serving.map((member) => [member.name, null]) : decodeCursor(method, cursor);
    const byName = new Map(serving.map((member) => [member.name, member]));
    const own = new Map<Member, string | null>();
    // A server gone since the cursor was given is passed over: the client was told the lists changed.
    for (const [name, at] of position) {
      const member = byName.get(name);
      if (member !== undefined) own.set(member, at);
    }
    const answers = await this.gather([...own.keys()], method, (member) => {
      const at = own.get(member);
      return member.ask(method, typeof at === 'string' ? { cursor: at } : undefined);
    });
    const lists: ServerList[] = [];
    const next: Position = [];
    for (const { member, outcome } of answers) {
      if (!this.usable(member, method, outcome) || !outcome.ok) continue;
      lists.push({ member, items: itemsOf(outcome.result[key]) });
      const more = outcome.result.nextCursor;
      if (typeof more === 'string') next.push([member.name, more]);
    }
    return { lists, ...(next.length === 0 ? {} : { nextCursor: encodeCursor(method, next) }) };
  }

  /** Every page of each server's list, whatever the caller's rules hide: for routing only. */
  async whole(serving: readonly Member[], method: string, key: string): Promise<ServerList[]> {
    const answers = await this.gather(serving, method, (member) => wholeList(member, method, key));
    return answers
      .filter(({ member, outcome }) => this.usable(member, method, outcome))
      .map(({ member, outcome }) => ({ member, items: outcome.ok ? itemsOf(outcome.result[key]) : [] }));
  }

  /** Each server's answer, but for those still silent `graceMs` after the first (logged). */
  private async gather(
    members: readonly Member[],
    method: string,
    ask: (member: Member) => Promise<Outcome>,
  ): Promise<{ member: Member; outcome: Outcome }[]> {
    const { answered, late } = await gathered(members, ask, this.graceMs);
    for (const { member } of late) {
      this.logger.warn(
        { server: member.name },
        `the server "${member.name}" has not answered ${method} ${this.graceMs} ms after the first: the merged list goes without it`,
      );
    }
    return answered.map(({ member, value }) => ({ member, outcome: value }));
  }

  /** Whether a server's answer goes into the merged list (logged if not). */
  private usable(member: Member, method: string, outcome: Outcome): boolean {
    if (outcome.ok) return true;
    // A server without prompts (or resources) says so with -32601: nothing to log.
    if (outcome.error.code !== ErrorCode.MethodNotFound) {
      this.logger.warn(
        { server: member.name, error: outcome.error.message },
        `the server "${member.name}" failed ${method}: the merged list goes without it`,
      );
    }
    return false;
  }
}

/** Every page of one server's list, its items under `key` of the result. */
async function wholeList(member: Member, method: string, key: string): Promise<Outcome> {
  const items: unknown[] = [];
  let cursor: unknown;
  for (let page = 0; page < MAX_PAGES; page++) {
    const outcome = await member.askUnnarrowed(method, cursor === undefined ? undefined : { cursor });
    if (!outcome.ok) return outcome;
    items.push(...itemsOf(outcome.result[key]));
    cursor = outcome.result.nextCursor;
    if (typeof cursor !== 'string') break;
  }
  return { ok: true, result: { [key]: items } };
}

function itemsOf(listed: unknown): unknown[] {
  return Array.isArray(listed) ? (listed as unknown[]) : [];
}
