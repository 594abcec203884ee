/**
 * Per-tool policy: the first rule whose glob matches the tool name decides, the defaults fill the rest.
 */
import type { Config, TaskSupport, ToolRule } from './schema.js';

export interface ToolPolicy {
  taskSupport: TaskSupport;
  defaultTtl: number;
  maxTtl: number;
  pollInterval: number;
  immediateResponse?: string;
  timeout?: number;
  unwrap: boolean;
}

export const MIN_TTL_MS = 1_000;

export function globToRegExp(glob: string): RegExp {
  const source = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`);
}

export class Policy {
  private readonly rules: { pattern: RegExp; rule: ToolRule }[];
  private readonly cache = new Map<string, ToolPolicy>();

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
   * The actual ttl for a requested one: the tool's default when absent, never so short that the task is
   * gone before anyone could read it, and never above the configured maximum.
   */
  ttlFor(policy: ToolPolicy, requested: number | undefined): number {
    return Math.min(policy.maxTtl, Math.max(MIN_TTL_MS, requested ?? policy.defaultTtl));
  }

  private resolve(name: string): ToolPolicy {
    const rule = this.rules.find(({ pattern }) => pattern.test(name))?.rule;
    const tasks = this.config.tasks;
    const maxTtl = rule?.maxTtl ?? tasks.maxTtl;
    const policy: ToolPolicy = {
      taskSupport: rule?.taskSupport ?? 'optional',
      defaultTtl: Math.min(rule?.ttl ?? tasks.defaultTtl, maxTtl),
      maxTtl,
      pollInterval: rule?.pollInterval ?? tasks.pollInterval,
      unwrap: rule?.unwrap ?? false,
    };
    if (rule?.immediateResponse !== undefined) policy.immediateResponse = rule.immediateResponse;
    if (rule?.timeout !== undefined) policy.timeout = rule.timeout;
    return policy;
  }
}
