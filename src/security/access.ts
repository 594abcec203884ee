/**
 * The config's authorization rules (`auth.rules`) turned into one caller's rights, when the front has
 * authenticated it: the rules that match it (by subject, or by a group, role or scope of its OAuth token)
 * grant, together, what the caller may do; each rule grants the tools it allows less those it denies.
 * Without rules nothing
 * is restricted (undefined: today's behaviour), and `adminSubjects` keeps granting the operator's pages.
 */
import { globToRegExp } from '../config/policy.js';
import type { AccessRule, Config } from '../config/schema.js';
import type { CallerAccess } from '../protocol/caller.js';
import { invalidParams, methodNotFound, type ProtocolError } from '../protocol/errors.js';
import { isObject, type JsonObject } from '../protocol/messages.js';
import type { AccessRefusal } from '../tasks/audit-log.js';
import type { Grant } from './oauth-tokens.js';

/** Who the rules are matched against: the subject, and what its token grants (OAuth only). */
export interface Principal {
  subject: string;
  grant?: Pick<Grant, 'scopes' | 'groups'>;
}

interface CompiledRule {
  subjects: readonly RegExp[];
  groups: ReadonlySet<string>;
  scopes: ReadonlySet<string>;
  allow: readonly RegExp[];
  deny: readonly RegExp[];
  rule: AccessRule;
}

/** The rights of each caller, by the rules; undefined when there are none (every caller may do everything). */
export function accessRules(
  auth: Pick<Config['auth'], 'rules' | 'adminSubjects'>,
): ((principal: Principal) => CallerAccess) | undefined {
  if (auth.rules.length === 0) return undefined;
  const admins = new Set(auth.adminSubjects);
  const rules: CompiledRule[] = auth.rules.map((rule) => ({
    subjects: (rule.subjects ?? []).map(globToRegExp),
    groups: new Set(rule.groups),
    scopes: new Set(rule.scopes),
    allow: (rule.tools?.allow ?? []).map(globToRegExp),
    deny: (rule.tools?.deny ?? []).map(globToRegExp),
    rule,
  }));
  return (principal) => {
    const matching = rules.filter((rule) => matches(rule, principal));
    const grantKey = rules.flatMap((rule, index) => (matching.includes(rule) ? [index] : [])).join(',');
    const some = (key: 'taskList' | 'metrics' | 'dashboard') =>
      matching.some(({ rule }) => rule[key] === true);
    const admin = admins.has(principal.subject);
    const verdicts = new Map<string, boolean>();
    return {
      mayCall: (tool) => {
        let verdict = verdicts.get(tool);
        if (verdict === undefined) {
          verdict = matching.some(
            ({ allow, deny }) =>
              allow.some((glob) => glob.test(tool)) && !deny.some((glob) => glob.test(tool)),
          );
          // A caller's list of verdicts is bounded: a client naming endless tools only recomputes.
          if (verdicts.size < 1_000) verdicts.set(tool, verdict);
        }
        return verdict;
      },
      allTasks: matching.some(({ rule }) => rule.tasks === 'all'),
      taskList: some('taskList'),
      metrics: admin || some('metrics'),
      dashboard: admin || some('dashboard'),
      grantKey: admin ? `${grantKey};admin` : grantKey,
    };
  };
}

function matches(rule: CompiledRule, { subject, grant }: Principal): boolean {
  return (
    rule.subjects.some((glob) => glob.test(subject)) ||
    (grant?.groups.some((group) => rule.groups.has(group)) ?? false) ||
    (grant?.scopes.some((scope) => rule.scopes.has(scope)) ?? false)
  );
}

/**
 * A tools/list page without the tools the caller may not call. It is this caller's list, so a 2026-07-28
 * upstream's `cacheScope: public` becomes `private`: no shared cache may hand it to another caller.
 */
export function callableTools(result: JsonObject, access: CallerAccess | undefined): JsonObject {
  if (access === undefined || !Array.isArray(result.tools)) return result;
  const tools = result.tools.filter(
    (tool: unknown) => !isObject(tool) || typeof tool.name !== 'string' || access.mayCall(tool.name),
  );
  return { ...result, tools, ...(result.cacheScope === 'public' ? { cacheScope: 'private' } : {}) };
}

/**
 * A call to a tool the caller may not call, as the audit and the caller are told of it (naming the tool as
 * the caller knows it); undefined when it may. It is answered as a tool that does not exist (MCP's -32602
 * for an unknown tool, in the words of the spec's example): the answer names no rule, and tells nothing of
 * who else may call it.
 */
export function toolRefusal(
  access: CallerAccess | undefined,
  tool: string | undefined,
): { refused: AccessRefusal; error: ProtocolError } | undefined {
  if (tool === undefined || access?.mayCall(tool) !== false) return undefined;
  const shown = access.shownName?.(tool) ?? tool;
  return { refused: { right: 'tool', tool: shown }, error: unknownTool(shown) };
}

/**
 * The answer to a call naming a tool that does not exist, and so to one the rules hide: with several servers
 * the aggregator answers a name no server has with it too, so that the two cannot be told apart.
 */
export const unknownTool = (name: string): ProtocolError => invalidParams(`Unknown tool: ${name}`);

/** tasks/list refused to a caller no rule grants it, as it is where tasks/list is not served. */
export const taskListRefused = (): ProtocolError =>
  methodNotFound('tasks/list is not available to this caller');
