/**
 * The latest validated access token of each caller (issuer and subject), as the HTTP front saw it: what a
 * token exchange (or, when the operator asked for it, bearer pass-through) starts from. A caller that
 * refreshes its token keeps its session, so the session's upstream reads the newest one here rather than
 * holding the one that opened it. Kept in this process only, and never past the token's own expiry.
 */
const MAX_CALLERS = 10_000;

interface Held {
  token: string;
  expiresAt: number;
}

export class CallerTokens {
  private readonly byCaller = new Map<string, Held>();

  constructor(private readonly now: () => number = Date.now) {}

  note(identity: string, token: string, expiresAt: number): void {
    const held = this.byCaller.get(identity);
    // A request that was validated earlier but arrives later must not put back an older token.
    if (held !== undefined && held.expiresAt > expiresAt) return;
    this.byCaller.delete(identity);
    if (this.byCaller.size >= MAX_CALLERS) this.forgetExpired();
    this.byCaller.set(identity, { token, expiresAt });
  }

  /** The caller's latest token while it is valid. */
  latest(identity: string): string | undefined {
    const held = this.byCaller.get(identity);
    if (held === undefined) return undefined;
    if (this.now() < held.expiresAt) return held.token;
    this.byCaller.delete(identity);
    return undefined;
  }

  private forgetExpired(): void {
    const now = this.now();
    for (const [identity, held] of this.byCaller) if (now >= held.expiresAt) this.byCaller.delete(identity);
    if (this.byCaller.size >= MAX_CALLERS) this.byCaller.delete(this.byCaller.keys().next().value!);
  }
}
