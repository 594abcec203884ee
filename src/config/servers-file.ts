/**
 * `--servers FILE`: the server list of a desktop client's config (`{"mcpServers": {...}}`, as Claude Desktop
 * writes claude_desktop_config.json), read as `upstreams`. The file's other settings are the client's and
 * are left alone; of each server, what says how to reach it is taken (command, args, env, cwd, or url and
 * headers), and a server marked `disabled` is left out.
 */
import { readFileSync } from 'node:fs';
import { SERVER_NAME } from './schema.js';

export interface ServersFile {
  path: string;
  /** `upstreams` as the config schema takes it; undefined when the file could not be used. */
  upstreams?: Record<string, Record<string, unknown>>;
  problems: string[];
}

/** The transports of a desktop entry's `type` that taskgate reaches a server by. */
const STDIO_TYPES = new Set(['stdio']);
const HTTP_TYPES = new Set(['http', 'streamable-http', 'streamableHttp']);

export function readServersFile(path: string): ServersFile {
  let root: unknown;
  try {
    root = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    const why =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    return { path, problems: [`--servers ${path}: cannot read it as JSON: ${why}`] };
  }
  const servers = isRecord(root) ? root.mcpServers : undefined;
  if (!isRecord(servers)) {
    return { path, problems: [`--servers ${path}: expected {"mcpServers": {"name": {...}, ...}}`] };
  }
  const problems: string[] = [];
  const upstreams: Record<string, Record<string, unknown>> = {};
  const origins = new Map<string, string>();
  for (const [name, entry] of Object.entries(servers)) {
    const where = `--servers ${path}: mcpServers.${JSON.stringify(name)}`;
    if (!isRecord(entry)) {
      problems.push(`${where}: expected an object with "command" or "url"`);
      continue;
    }
    if (entry.disabled === true) continue;
    const server = serverOf(entry);
    if (typeof server === 'string') {
      problems.push(`${where}: ${server}`);
      continue;
    }
    const own = nameOf(name);
    const other = origins.get(own);
    if (other !== undefined) {
      problems.push(`${where}: named "${own}" here, as is ${JSON.stringify(other)}: rename one of them`);
      continue;
    }
    origins.set(own, name);
    upstreams[own] = server;
  }
  return problems.length > 0 ? { path, problems } : { path, upstreams, problems };
}

/** A desktop entry as an `upstreams` entry, or why it cannot be one. */
function serverOf(entry: Record<string, unknown>): Record<string, unknown> | string {
  const type = typeof entry.type === 'string' ? entry.type : undefined;
  if (type === 'sse') {
    return 'type "sse" is the old HTTP+SSE transport, which taskgate does not speak: give the server\'s Streamable HTTP url with type "http"';
  }
  if (type !== undefined && !STDIO_TYPES.has(type) && !HTTP_TYPES.has(type)) {
    return `unknown type ${JSON.stringify(type)}: expected "stdio" or "http"`;
  }
  const picked: Record<string, unknown> = {};
  for (const key of ['command', 'args', 'env', 'cwd', 'url', 'headers'] as const) {
    if (entry[key] !== undefined) picked[key] = entry[key];
  }
  // The schema says what is wrong with the values themselves.
  return picked;
}

/** The name as a prefix may have it: what SERVER_NAME refuses becomes "-" ("my files" → "my-files"). */
function nameOf(name: string): string {
  if (SERVER_NAME.test(name)) return name;
  const cleaned = name.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64);
  return cleaned === '' ? 'server' : cleaned;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
