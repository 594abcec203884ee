/**
 * Per-tool policy: the first rule whose glob matches the tool name decides, the defaults fill the rest.
 */
import type { Logger } from 'pino';
import type { Config, TaskSupport, ToolRule } from './schema.js';
import { didYouMean } from './suggest.js';

export interface ToolPolicy {
  taskSupport: TaskSupport;
  defaultTtl: number;
  maxTtl: number;
  pollInterval: number;
  immediateResponse?: string;
  timeout?: number;
  unwrap: boolean;
  /** 2026-07-28 clients with the tasks extension: how long an `optional` call runs before it becomes a task. */
  promoteAfter: number;
}

export const MIN_TTL_MS = 1_000;

export function globToRegExp(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`);
}

/**
 * Rules that name one tool exactly (no `*` or `?`) that is not among `toolNames`: most likely typos, since
 * such a rule can never apply. Wildcard rules are left alone (matching nothing yet is their right).
 */
export function unmatchedRules(rules: readonly ToolRule[], toolNames: Iterable<string>): ToolRule[] {
  const names = new Set(toolNames);
  return rules.filter((rule) => !/[*?]/.test(rule.match) && !names.has(rule.match));
}

export class Policy {
  private readonly rules: { pattern: RegExp; rule: ToolRule }[];
  private readonly cache = new Map<string, ToolPolicy>();
  private unmatchedChecked = false;

  constructor(private readonly config: Config) {
    this.rules = config.tools.map((rule) => ({ pattern: globToRegExp(rule.match), rule }));
  }

  forTool(name: string): ToolPolicy {
    let policy = this.cache.get(name);
    if (!policy) {
      policy = this.resolve(name);
      if (this.cache.size < 10_000) this.cache.set(name, policy);
    }
    return policy;
  }

  /**
   * Warns about each rule that names a tool the upstream does not have (see `unmatchedRules`), once per
   * Policy however many sessions call it. Give it the upstream's complete tools/list (every page).
   */
  warnUnmatchedRules(toolNames: Iterable<string>, logger: Pick<Logger, 'warn'>): void {
    if (this.unmatchedChecked) return;
    this.unmatchedChecked = true;
    const names = [...toolNames];
    for (const rule of unmatchedRules(this.config.tools, names)) {
      logger.warn(
        { rule: rule.match },
        `the tools rule for "${rule.match}" has no effect: the upstream has no tool of that name${didYouMean(rule.match, names)}`,
      );
    }
  }

  /**
   * The actual ttl for a requested one: the tool's default when absent, never so short that the task is
   * gone before anyone could read it, and never above the configured maximum.
   */
  ttlFor(policy: ToolPolicy, requested: number | undefined): number {
    return Math.min(policy.maxTtl, Math.max(MIN_TTL_MS, requested ?? policy.defaultTtl));
  }

  /** The policy for a request no tool rule covers (client-side tasks): the task defaults. */
  get defaults(): ToolPolicy {
    return this.fromRule(undefined);
  }

  private resolve(name: string): ToolPolicy {
    return this.fromRule(this.rules.find(({ pattern }) => pattern.test(name))?.rule);
  }

  private fromRule(rule: ToolRule | undefined): ToolPolicy {
    const tasks = this.config.tasks;
    const maxTtl = rule?.maxTtl ?? tasks.maxTtl;
    const policy: ToolPolicy = {
      taskSupport: rule?.taskSupport ?? 'optional',
      defaultTtl: Math.min(rule?.ttl ?? tasks.defaultTtl, maxTtl),
      maxTtl,
      pollInterval: rule?.pollInterval ?? tasks.pollInterval,
      unwrap: rule?.unwrap ?? false,
      promoteAfter: rule?.promoteAfter ?? tasks.promoteAfter,
    };
    if (rule?.immediateResponse !== undefined) policy.immediateResponse = rule.immediateResponse;
    if (rule?.timeout !== undefined) policy.timeout = rule.timeout;
    return policy;
  }
}
