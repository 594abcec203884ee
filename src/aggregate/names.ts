/**
 * How the names of several servers share one list: a tool or prompt of a prefixed server is
 * `{server}{separator}{name}`, one of a server mounted without prefix keeps its name; a task id is always
 * `{server}{separator}{id}`, so that `tasks/*` find the server (or taskgate's own store behind it) again.
 */
import { globToRegExp } from '../config/policy.js';
import { DEFAULT_SEPARATOR, type Config } from '../config/schema.js';

export interface MountedName {
  server: string;
  /** As the server itself names it. */
  name: string;
}

export class Names {
  constructor(readonly separator: string) {}

  /** The name the client sees for a server's own `name`. */
  outer(server: string, prefixed: boolean, name: string): string {
    return prefixed ? `${server}${this.separator}${name}` : name;
  }

  /** Which of `prefixed` servers a name the client used is prefixed with, and the server's own name. */
  inner(name: string, prefixed: Iterable<string>): MountedName | undefined {
    for (const server of prefixed) {
      const start = `${server}${this.separator}`;
      if (name.startsWith(start) && name.length > start.length) {
        return { server, name: name.slice(start.length) };
      }
    }
    return undefined;
  }

  taskId(server: string, id: string): string {
    return `${server}${this.separator}${id}`;
  }

  /** The server and its own id of a task id taskgate gave out; undefined for any other. */
  innerTaskId(id: string, servers: Iterable<string>): MountedName | undefined {
    return this.inner(id, servers);
  }
}

/** The names of the config's servers, by its separator. */
export const namesOf = (config: Config): Names =>
  new Names(config.namespacing?.separator ?? DEFAULT_SEPARATOR);

/** Which of a server's tools are exposed: those `include` matches (all without it) less those `exclude` matches. */
export class ToolFilter {
  private readonly include: RegExp[] | undefined;
  private readonly exclude: RegExp[];

  constructor(include: readonly string[] | undefined, exclude: readonly string[] | undefined) {
    this.include = include?.map(globToRegExp);
    this.exclude = (exclude ?? []).map(globToRegExp);
  }

  exposes(name: string): boolean {
    if (this.include !== undefined && !this.include.some((pattern) => pattern.test(name))) return false;
    return !this.exclude.some((pattern) => pattern.test(name));
  }
}

/** Two servers list one name: which they are, and the name. */
export class NameCollisionError extends Error {
  constructor(
    readonly kind: 'tool' | 'prompt',
    readonly listedName: string,
    readonly first: string,
    readonly second: string,
  ) {
    super(
      `${kind} name collision: "${listedName}" is listed by server "${first}" and by server "${second}"; mount one of them with a prefix (upstreams.${second}.prefix: true) or exclude the ${kind}`,
    );
    this.name = 'NameCollisionError';
  }
}
