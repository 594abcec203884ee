/**
 * The command line: `taskgate [flags] [-- command args...]`, turned into a config input for the schema.
 */
import { parseArgs } from 'node:util';
import { TASK_SUPPORT_VALUES, type ConfigInput, type TaskSupport } from './schema.js';

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const OPTIONS = {
  'tool-task-support': { type: 'string', multiple: true },
  'default-ttl': { type: 'string' },
  'max-ttl': { type: 'string' },
  'poll-interval': { type: 'string' },
  'max-tasks': { type: 'string' },
  'max-result-bytes': { type: 'string' },
  'max-message-bytes': { type: 'string' },
  'expose-task-list': { type: 'boolean' },
  'no-status-notifications': { type: 'boolean' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const;

export const HELP = `Usage: taskgate [options] [-- command [args...]]

Puts MCP tasks (2025-11-25) in front of an MCP server started as "command" on stdio.
Without a command, taskgate serves the bundled example server (examples/legacy-server.js).

Tasks
  --tool-task-support GLOB=VALUE  taskSupport for tools whose name matches GLOB (* and ?), first
                                  match wins; VALUE is required, optional or forbidden (repeatable;
                                  default: every tool optional)
  --default-ttl MS                ttl of a task created without one (default 3600000, 1 h)
  --max-ttl MS                    largest ttl granted, whatever is asked (default 86400000, 24 h)
  --poll-interval MS              pollInterval suggested to clients (default 1000)
  --max-tasks N                   tasks held at once, live and finished (default 10000)
  --max-result-bytes N            bytes of finished results held at once (default 268435456)
  --expose-task-list              serve tasks/list although tasks are not bound to an identity
                                  (anyone on the connection can list its tasks)
  --no-status-notifications       do not send notifications/tasks/status

Transport
  --max-message-bytes N           largest JSON-RPC message accepted (default 33554432)

Output
  --log-level LEVEL               fatal, error, warn, info, debug, trace or silent (default info);
                                  logs always go to stderr
  -h, --help                      this text
  -v, --version                   the version
`;

export interface CommandLine {
  help: boolean;
  version: boolean;
  input: ConfigInput;
}

export function parseCommandLine(argv: readonly string[]): CommandLine {
  const separator = argv.indexOf('--');
  const ours = separator === -1 ? argv : argv.slice(0, separator);
  const command = separator === -1 ? [] : argv.slice(separator + 1);
  let values;
  try {
    ({ values } = parseArgs({ args: [...ours], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const tasks: NonNullable<ConfigInput['tasks']> = {};
  const input: ConfigInput = { tasks };
  const number = (flag: keyof typeof OPTIONS): number | undefined => {
    const text = values[flag];
    if (typeof text !== 'string') return undefined;
    const parsed = Number(text);
    if (text.trim() === '' || !Number.isFinite(parsed))
      throw new UsageError(`--${flag} expects a number, got "${text}"`);
    return parsed;
  };
  const set = <T>(value: T | undefined, apply: (value: T) => void): void => {
    if (value !== undefined) apply(value);
  };
  set(number('default-ttl'), (v) => (tasks.defaultTtl = v));
  set(number('max-ttl'), (v) => (tasks.maxTtl = v));
  set(number('poll-interval'), (v) => (tasks.pollInterval = v));
  set(number('max-tasks'), (v) => (tasks.maxTasks = v));
  set(number('max-result-bytes'), (v) => (tasks.maxResultBytes = v));
  set(number('max-message-bytes'), (v) => (input.maxMessageBytes = v));
  if (values['expose-task-list']) tasks.exposeList = true;
  if (values['no-status-notifications']) tasks.statusNotifications = false;
  set(values['log-level'], (v) => (input.logLevel = v as ConfigInput['logLevel']));
  const rules = (values['tool-task-support'] ?? []).map(parseToolTaskSupport);
  if (rules.length > 0) input.tools = rules;
  const [executable, ...args] = command;
  if (executable !== undefined) input.upstream = { command: executable, args };
  else if (separator !== -1) throw new UsageError('nothing follows "--": name the upstream server command');
  return { help: values.help === true, version: values.version === true, input };
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
