/**
 * Who made a request, made once by the edge that read it (a 2025 session, a 2026-07-28 POST) and carried
 * with the request into the core: the task it creates is bound to `identity`, a task it names is checked
 * against it, audit lines name `subject`, and per-caller limits count it against `quota`. Nothing
 * downstream works out the caller again.
 */
export interface RequestCaller {
  /** The authenticated identity (a binding key); none when callers are not identified. */
  readonly identity?: string;
  /** Who the identity is, for logs and audit (never a token). */
  readonly subject?: string;
  /** Whom per-caller limits count the request against; none for a request counted already (the bridge's own). */
  readonly quota?: string;
  /** What the caller may do (the config's authorization rules, for it); none: everything, its own tasks only. */
  readonly access?: CallerAccess;
}

/** A caller's rights, worked out once by the edge that authenticated it (src/security/access.ts). */
export interface CallerAccess {
  /** It may call the tool, and sees it in tools/list. */
  mayCall(tool: string): boolean;
  /**
   * The name the caller knows a tool by, where a Session names it otherwise (a server's Session behind an
   * aggregator, its own name: the caller's is prefixed); a refusal names that one.
   */
  shownName?(tool: string): string;
  /** It may read and cancel any caller's task, not only its own. */
  readonly allTasks: boolean;
  readonly taskList: boolean;
  readonly metrics: boolean;
  readonly dashboard: boolean;
  /**
   * Which rules grant it, as a key: two callers with the same key have the same rights. A 2026-07-28
   * caller's bridge is chosen by it as well as by identity, since servers behind an aggregator are bound
   * to the rights of the request that opened them.
   */
  readonly grantKey?: string;
}

/** A request no caller made (a bridge's own bookkeeping without a task behind it): no identity, no quota. */
export const NO_CALLER: RequestCaller = {};
