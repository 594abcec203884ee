/**
 * The command line: `taskgate [check-config [FILE] | print-config] [flags] [-- command args...]`, turned
 * into a config input for the schema. Only its syntax is checked here (exit code 2); whether the values
 * fit is the config's business.
 */
import { parseArgs } from 'node:util';
import { TASK_SUPPORT_VALUES, type ConfigInput, type TaskSupport } from './schema.js';
import { FLAG_SETTINGS, TEXT_METAVARS, assign } from './settings.js';
import { closest, didYouMean, foreignFlagHint } from './suggest.js';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

export const SUBCOMMANDS = ['check-config', 'print-config'] as const;
export type Subcommand = (typeof SUBCOMMANDS)[number];

type OptionSpec = { type: 'string' | 'boolean'; multiple?: boolean; short?: string };

const OPTIONS: Record<string, OptionSpec> = {
  config: { type: 'string' },
  servers: { type: 'string' },
  'tool-task-support': { type: 'string', multiple: true },
  'allowed-origin': { type: 'string', multiple: true },
  'auth-token': { type: 'string', multiple: true },
  'upstream-url': { type: 'string' },
  'upstream-header': { type: 'string', multiple: true },
  ...Object.fromEntries(
    FLAG_SETTINGS.map((setting) => [
      setting.flag,
      { type: setting.sets === undefined ? 'string' : 'boolean' },
    ]),
  ),
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
};

export interface CommandLine {
  /** Absent for a proxy run. */
  subcommand?: Subcommand;
  help: boolean;
  version: boolean;
  /** `--config FILE`, or the FILE of `check-config FILE`. */
  configFile?: string;
  /** `--servers FILE`: a desktop client's `{"mcpServers": ...}` JSON, read as `upstreams`. */
  serversFile?: string;
  input: ConfigInput;
}

export function parseCommandLine(argv: readonly string[]): CommandLine {
  const first = argv[0];
  const subcommand = SUBCOMMANDS.find((name) => name === first);
  const rest = subcommand === undefined ? argv : argv.slice(1);
  const separator = rest.indexOf('--');
  let ours = separator === -1 ? rest : rest.slice(0, separator);
  const command = separator === -1 ? [] : rest.slice(separator + 1);
  let configFile: string | undefined;
  if (subcommand === 'check-config' && ours[0] !== undefined && !ours[0].startsWith('-')) {
    configFile = ours[0];
    ours = ours.slice(1);
  }
  ours = withNegativeValues(ours);
  refuseUnknown(ours);
  let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    ({ values } = parseArgs({ args: [...ours], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }

  const input: ConfigInput = { tasks: {} };
  for (const setting of FLAG_SETTINGS) {
    const value = values[setting.flag];
    if (value === undefined) continue;
    if (setting.sets !== undefined) assign(input, setting, setting.sets);
    else if (TEXT_METAVARS.has(setting.metavar)) assign(input, setting, value);
    else assign(input, setting, number(setting.flag, String(value)));
  }
  const rules = ((values['tool-task-support'] ?? []) as string[]).map(parseToolTaskSupport);
  if (rules.length > 0) input.tools = rules;
  const tokens = ((values['auth-token'] ?? []) as string[]).map(parseAuthToken);
  if (tokens.length > 0) input.auth = { tokens };
  const origins = (values['allowed-origin'] ?? []) as string[];
  if (origins.length > 0) input.http = { ...input.http, allowedOrigins: origins };
  const [executable, ...args] = command;
  const url = values['upstream-url'];
  const serversFile = typeof values.servers === 'string' ? values.servers : undefined;
  if (serversFile !== undefined && (executable !== undefined || typeof url === 'string')) {
    throw new UsageError(
      'give the servers once: --servers FILE, or one server after "--" or with --upstream-url',
    );
  }
  if (executable !== undefined && typeof url === 'string') {
    throw new UsageError('give the upstream once: a command after "--" or --upstream-url, not both');
  }
  const headers = Object.fromEntries(((values['upstream-header'] ?? []) as string[]).map(parseHeader));
  if (Object.keys(headers).length > 0 && typeof url !== 'string') {
    throw new UsageError('--upstream-header goes with --upstream-url');
  }
  // --upstream-sharing and --upstream-pool-size are already in input.upstream.
  if (executable !== undefined) input.upstream = { ...input.upstream, command: executable, args };
  else if (typeof url === 'string') {
    input.upstream = { ...input.upstream, url, ...(Object.keys(headers).length > 0 ? { headers } : {}) };
  } else if (separator !== -1) throw new UsageError('nothing follows "--": name the upstream server command');

  if (typeof values.config === 'string') {
    if (configFile !== undefined) throw new UsageError('give the config file once: as FILE or as --config');
    configFile = values.config;
  }
  if (subcommand === 'check-config' && configFile === undefined && values.help !== true) {
    throw new UsageError('check-config needs the config file to check: taskgate check-config FILE');
  }
  return {
    ...(subcommand === undefined ? {} : { subcommand }),
    help: values.help === true,
    version: values.version === true,
    ...(configFile === undefined ? {} : { configFile }),
    ...(serversFile === undefined ? {} : { serversFile }),
    input,
  };
}

/**
 * `--max-tasks -1` as `--max-tasks=-1`: node's parser takes a value that starts with "-" for a flag and
 * calls it ambiguous; a negative number is a value, which the config then checks (and names the range).
 */
function withNegativeValues(args: readonly string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const next = args[i + 1];
    const takesValue = arg.startsWith('--') && OPTIONS[arg.slice(2)]?.type === 'string';
    if (takesValue && next !== undefined && /^-\.?\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}

/** An unknown flag or a stray argument, named with the closest thing we know (node's own message does not). */
function refuseUnknown(args: readonly string[]): void {
  const { tokens } = parseArgs({
    args: [...args],
    options: OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind === 'option' && !(token.name in OPTIONS)) {
      const hint = foreignFlagHint(token.rawName);
      if (hint !== undefined) throw new UsageError(hint);
      const flags = Object.keys(OPTIONS).map((name) => `--${name}`);
      throw new UsageError(`unknown flag ${token.rawName}${didYouMean(token.rawName, flags, '')}`);
    }
    if (token.kind === 'positional') {
      const near = closest(token.value, SUBCOMMANDS);
      if (near === token.value) throw new UsageError(`${near} comes first: taskgate ${near} ...`);
      throw new UsageError(
        near === undefined
          ? `unexpected argument "${token.value}": put the upstream server's command after "--" (taskgate [flags] -- command [args...])`
          : `unknown command "${token.value}" (did you mean ${near}?)`,
      );
    }
  }
}

function number(flag: string, text: string): number {
  const parsed = Number(text);
  if (text.trim() === '' || !Number.isFinite(parsed)) {
    throw new UsageError(`--${flag} expects a number, got "${text}"`);
  }
  return parsed;
}

function parseToolTaskSupport(text: string): { match: string; taskSupport: TaskSupport } {
  const at = text.lastIndexOf('=');
  const match = text.slice(0, at);
  const value = text.slice(at + 1);
  if (at <= 0 || !(TASK_SUPPORT_VALUES as readonly string[]).includes(value)) {
    throw new UsageError(`--tool-task-support expects GLOB=${TASK_SUPPORT_VALUES.join('|')}, got "${text}"`);
  }
  return { match, taskSupport: value as TaskSupport };
}

function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(':');
  const name = text.slice(0, colon).trim();
  if (colon <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
    throw new UsageError(`--upstream-header expects "Name: value", got "${text}"`);
  }
  return [name, text.slice(colon + 1).trim()];
}

function parseAuthToken(text: string): { token: string; subject: string } {
  const at = text.lastIndexOf('=');
  if (at <= 0 || at === text.length - 1) {
    throw new UsageError('--auth-token expects TOKEN=SUBJECT (the subject names the caller in logs)');
  }
  return { token: text.slice(0, at), subject: text.slice(at + 1) };
}
