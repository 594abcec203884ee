/**
 * Which server a tool or prompt the client named is, and under which name of its own: a prefixed server's
 * by its prefix, one of a server mounted without prefix by the servers' merged lists (the whole lists,
 * read before the first page and after any change, with what the caller's auth.rules hide: such a name goes
 * to its server's Session, which refuses it and audits the refusal as for a prefixed server). The merged
 * tools/list and prompts/list pages are made here too, since a collision between servers is found in those
 * lists.
 */
import type { Logger } from 'pino';
import type { ToolFacts } from '../modern/bridge-call.js';
import type { JsonObject } from '../protocol/messages.js';
import type { ListReader, ServerList } from './lists.js';
import { mergedNames, type Listed, type MergedList } from './merge.js';
import type { Member } from './member.js';
import { NameCollisionError, type Names } from './names.js';

type NamedKind = 'tool' | 'prompt';

const LISTS = {
  'tools/list': { key: 'tools', kind: 'tool' },
  'prompts/list': { key: 'prompts', kind: 'prompt' },
} as const;

export interface NameRoutesOptions {
  names: Names;
  logger: Logger;
  lists: ListReader;
  /** The servers serving now (the others are left out of the lists). */
  serving(): Member[];
}

export class NameRoutes {
  private readonly byName: Map<string, Member>;
  /** Where each listed name goes, from the latest merged list (needed for servers without prefix). */
  private readonly routes: { [kind in NamedKind]?: Map<string, Listed> | undefined } = {};
  /**
   * The latest listing of the whole lists, shared by the calls that wait for it, and kept until the lists
   * change: a collision stands until then, without every call listing every server again.
   */
  private readonly listing: { [kind in NamedKind]?: Promise<Map<string, Listed>> | undefined } = {};

  constructor(
    private readonly members: readonly Member[],
    private readonly options: NameRoutesOptions,
  ) {
    this.byName = new Map(members.map((member) => [member.name, member]));
  }

  /** The lists of `kind` (of both, without one) are not what they were: routed again from the next. */
  changed(kind?: NamedKind): void {
    if (kind !== 'prompt') [this.routes.tool, this.listing.tool] = [undefined, undefined];
    if (kind !== 'tool') [this.routes.prompt, this.listing.prompt] = [undefined, undefined];
  }

  /** The page of the merged tools or prompts `cursor` points at: each server's next page, renamed. */
  async page(method: keyof typeof LISTS, cursor: unknown): Promise<JsonObject> {
    const { key, kind } = LISTS[method];
    // A name of a server without prefix may be any other's: the whole lists are checked (and routed) first.
    if (cursor === undefined && this.members.some((member) => !member.prefixed))
      await this.wholeNames(kind, true);
    const page = await this.options.lists.page(this.options.serving(), method, key, cursor);
    const merged = this.merged(kind, page.lists);
    return { [key]: merged.items, ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }) };
  }

  /**
   * What the server of a tool the client named does with it (its Session knows), for the 2026-07-28 bridge's
   * decision (src/aggregate/modern.ts): a name of a server without prefix is known once a list gave it out.
   */
  toolFacts(name: string): ToolFacts {
    const found = this.routedName('tool', name, this.routes.tool);
    return found?.member.toolFacts?.(found.name) ?? NO_TOOL;
  }

  /** What toolFacts waits for: the whole lists, with a server without prefix (a collision, logged, ends it too). */
  toolsKnown(): Promise<unknown> | undefined {
    if (this.routes.tool !== undefined || this.members.every((member) => member.prefixed)) return undefined;
    return this.wholeNames('tool').catch(() => undefined);
  }

  /** The server and own name of a tool or prompt the client named; undefined when no server has it. */
  async named(kind: NamedKind, name: string): Promise<{ member: Member; name: string } | undefined> {
    const unprefixed = this.members.some((member) => !member.prefixed);
    return this.routedName(kind, name, unprefixed ? await this.wholeNames(kind) : undefined);
  }

  /**
   * Every server's whole list of tools or prompts merged, for routing: a collision is refused here. The
   * latest listing unless `fresh` (a client's first page: read again, so that what it shows and what is
   * routed agree).
   */
  private wholeNames(kind: NamedKind, fresh = false): Promise<Map<string, Listed>> {
    const kept = this.listing[kind];
    if (kept !== undefined && !fresh) return kept;
    const listing = this.listedNames(kind);
    this.listing[kind] = listing;
    // Handled here: a collision kept for the next calls is no unhandled rejection meanwhile.
    listing.then(
      (routes) => {
        if (this.listing[kind] === listing) this.routes[kind] = routes;
      },
      () => undefined,
    );
    return listing;
  }

  private async listedNames(kind: NamedKind): Promise<Map<string, Listed>> {
    const method = kind === 'tool' ? 'tools/list' : 'prompts/list';
    const lists = await this.options.lists.whole(this.options.serving(), method, LISTS[method].key);
    return this.merged(kind, lists).routes;
  }

  /** The servers' tools or prompts in one list (mergedNames): a collision is logged, and thrown. */
  private merged(kind: NamedKind, lists: ServerList[]): MergedList {
    const named = lists.map(({ member, items }) => ({
      server: member.name,
      prefixed: member.prefixed,
      items,
      exposes: (name: string) => kind !== 'tool' || member.filter.exposes(name),
      shows: (name: string) => kind !== 'tool' || member.shows(name),
    }));
    try {
      return mergedNames(kind, named, this.options.names);
    } catch (error) {
      if (error instanceof NameCollisionError) this.options.logger.error(error.message);
      throw error;
    }
  }

  private routedName(
    kind: NamedKind,
    name: string,
    routes: Map<string, Listed> | undefined,
  ): { member: Member; name: string } | undefined {
    // What the merged list gave out comes first: a server without prefix may list a name that looks prefixed.
    const listed = routes?.get(name);
    if (listed !== undefined) return { member: this.byName.get(listed.server)!, name: listed.name };
    const prefixed = this.members.filter((member) => member.prefixed).map((member) => member.name);
    const found = this.options.names.inner(name, prefixed);
    if (found === undefined) return undefined;
    const member = this.byName.get(found.server)!;
    return kind === 'tool' && !member.filter.exposes(found.name) ? undefined : { member, name: found.name };
  }
}

/** A tool no server is known to have: a plain call, which the aggregator then refuses (not found). */
const NO_TOOL: ToolFacts = {
  upstream: { listedAsTask: false, mayRunAsTask: false, requiresTask: false },
  policy: { taskSupport: 'forbidden', unwrap: false, promoteAfter: 0 },
};
