/**
 * What is wrong with the servers of a config as a whole (each value is the schema's to check): `upstreams`
 * beside `upstream`, or names that would make prefixed names ambiguous.
 */

/** Between a server's name and its tool's in `upstreams` (namespacing.separator unless set). */
export const DEFAULT_SEPARATOR = '__';

/** The part of a parsed config these checks read. */
export interface ServersPart {
  upstream?: unknown;
  upstreams?: Record<string, unknown> | undefined;
  namespacing?: { separator: string } | undefined;
}

/** `upstreams` beside `upstream`, or with names that would make prefixed names ambiguous. */
export function serverProblems(config: ServersPart): { path: (string | number)[]; message: string }[] {
  const { upstreams, upstream } = config;
  const separator = config.namespacing?.separator ?? DEFAULT_SEPARATOR;
  if (upstreams === undefined) return [];
  const names = Object.keys(upstreams);
  if (upstream !== undefined) {
    return [
      {
        path: ['upstreams'],
        message:
          'give the servers once: upstreams (several) or upstream (one, also from "-- command" or --upstream-url), not both',
      },
    ];
  }
  if (names.length === 0) return [{ path: ['upstreams'], message: 'name at least one server' }];
  return names
    .filter((name) => name.includes(separator))
    .map((name) => ({
      path: ['upstreams', name],
      message: `the server name "${name}" contains the separator "${separator}" (namespacing.separator): its prefixed names could not be told apart`,
    }));
}
