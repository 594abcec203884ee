/** "Did you mean": the known name closest to a mistyped one, when it is close enough to be a typo. */

/** Levenshtein distance (insertions, deletions and substitutions each cost 1), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const left = a.toLowerCase();
  const right = b.toLowerCase();
  let previous = Array.from({ length: right.length + 1 }, (_, j) => j);
  for (let i = 1; i <= left.length; i++) {
    const current = [i];
    for (let j = 1; j <= right.length; j++) {
      const substitution = previous[j - 1]! + (left[i - 1] === right[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[right.length]!;
}

/** The closest candidate within a third of the name's length (at least 2 edits), or undefined. */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  const limit = Math.max(2, Math.floor(name.length / 3));
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name, candidate);
    if (distance <= limit && (best === undefined || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate;
}

/** ` (did you mean "x"?)` or nothing. */
export function didYouMean(name: string, candidates: Iterable<string>, quote = '"'): string {
  const match = closest(name, candidates);
  return match === undefined ? '' : ` (did you mean ${quote}${match}${quote}?)`;
}

/**
 * Flags of the gateways people come from (supergateway, mcp-proxy), which taskgate does not take, with what
 * taskgate takes instead: a habit gets its translation, not only "unknown flag".
 */
export const FOREIGN_FLAGS: Readonly<Record<string, { from: string; instead: string }>> = {
  '--stdio': {
    from: "supergateway's",
    instead: 'the server\'s command goes after "--": taskgate --listen PORT -- command args...',
  },
  '--port': {
    from: "supergateway's and mcp-proxy's",
    instead: '--listen PORT (on 127.0.0.1) or --listen HOST:PORT',
  },
  '--host': { from: "mcp-proxy's", instead: '--listen HOST:PORT' },
  '--sse-port': { from: "mcp-proxy's", instead: '--listen PORT (on 127.0.0.1) or --listen HOST:PORT' },
  '--sse-host': { from: "mcp-proxy's", instead: '--listen HOST:PORT' },
  '--sse': {
    from: "supergateway's",
    instead:
      '--upstream-url URL, for a Streamable HTTP server (taskgate does not speak the older HTTP+SSE transport)',
  },
  '--streamableHttp': { from: "supergateway's", instead: '--upstream-url URL' },
  '--outputTransport': {
    from: "supergateway's",
    instead: 'taskgate serves stdio, or Streamable HTTP with --listen (no SSE or WebSocket front)',
  },
  '--header': { from: "supergateway's", instead: '--upstream-header "Name: value" (with --upstream-url)' },
  '--cors': {
    from: "supergateway's",
    instead: '--allowed-origin ORIGIN (loopback origins are always allowed)',
  },
  '--baseUrl': { from: "supergateway's", instead: '--path PATH (the one MCP endpoint)' },
  '--streamableHttpPath': { from: "supergateway's", instead: '--path PATH' },
  '--healthEndpoint': { from: "supergateway's", instead: '/healthz and /readyz are always served' },
};

/** `unknown flag --port: that is mcp-proxy's; in taskgate, --listen PORT ...`, for FOREIGN_FLAGS only. */
export function foreignFlagHint(flag: string): string | undefined {
  const known = FOREIGN_FLAGS[flag];
  return known === undefined
    ? undefined
    : `unknown flag ${flag}: that is ${known.from}; in taskgate, ${known.instead}`;
}
